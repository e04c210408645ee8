// A real OpenSSH server for the remote-target tests: /usr/sbin/sshd started as an ordinary child on
// 127.0.0.1 and a free port, with a host key and a user key made at test time, and an ssh_config that reaches it
// (`ssh -F <dir>/ssh_config tbtest`). The remote is this machine and this user. The tests point TuneBench at it
// with TUNEBENCH_SSH_COMMAND, exactly as a user's own config would. Test-only.
//
// Host aliases: `tbtest` (authorized key), `tbbadkey` (a key the server does not know). Every host's remote
// TMPDIR is <dir>/remote-tmp (SetEnv/AcceptEnv), so a test can see what a remote run leaves behind; start(names)
// adds an alias `tb-NAME` for each name, the same server with its own TMPDIR remote_tmp(NAME), so that runs
// side by side each show what they left.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace tb::test_util {

class SshdFixture {
 public:
  ~SshdFixture() { stop(); }

  // "" when the server answers `ssh tbtest true`, else why not (the tests skip with that reason).
  std::string start(const std::vector<std::string>& names = {}) {
    namespace fs = std::filesystem;
    if (::access("/usr/sbin/sshd", X_OK) != 0) return "no /usr/sbin/sshd (scripts/install-deps.sh installs openssh-server)";
    if (std::system("command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1") != 0)
      return "no ssh / ssh-keygen (openssh-client)";
    char tmpl[] = "/tmp/tb_sshd_XXXXXX";
    if (!::mkdtemp(tmpl)) return "mkdtemp failed";
    dir_ = tmpl;
    fs::create_directories(dir_ + "/remote-tmp");
    names_ = names;
    for (const auto& n : names_) fs::create_directories(remote_tmp(n));
    if (::geteuid() == 0) {
      std::error_code ec;
      fs::create_directories("/run/sshd", ec);  // sshd's privilege-separation directory, needed as root
    }
    for (const char* key : {"host_key", "user_key", "bad_key"})
      if (std::system(("ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/" + key + " >/dev/null 2>&1").c_str()) != 0)
        return std::string("ssh-keygen failed for ") + key;
    fs::copy_file(dir_ + "/user_key.pub", dir_ + "/authorized_keys");
    fs::permissions(dir_ + "/authorized_keys", fs::perms::owner_read | fs::perms::owner_write);
    std::string why;
    for (int attempt = 0; attempt < 3; ++attempt) {  // a port taken between our probe and sshd: another one
      port_ = free_port();
      write_configs();
      why = launch();
      if (why.empty()) return "";
    }
    return why;
  }

  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  const std::string& dir() const { return dir_; }
  int port() const { return port_; }
  std::string ssh_command() const { return "ssh -F " + dir_ + "/ssh_config"; }
  std::string remote_tmp() const { return dir_ + "/remote-tmp"; }
  std::string remote_tmp(const std::string& name) const { return dir_ + "/remote-tmp-" + name; }
  std::string log() const {
    std::ifstream f(dir_ + "/sshd.log");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

 private:
  static int free_port() {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    ::close(s);
    return port;
  }

  void write_configs() {
    const passwd* pw = ::getpwuid(::geteuid());
    const std::string user = pw ? pw->pw_name : "root";
    std::ofstream(dir_ + "/sshd_config")
        << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << dir_ << "/host_key\n"
        << "AuthorizedKeysFile " << dir_ << "/authorized_keys\nPidFile none\nStrictModes no\nUsePAM no\n"
        << "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        // OMP_WAIT_POLICY: the remote runs wait for work as the test's own children do (the suite runs them
        // PASSIVE, so that ranks side by side on two cores do not spin on each other's cores).
        << "AcceptEnv TMPDIR OMP_WAIT_POLICY\n"
        // Runs side by side open several connections at once: none refused for the default's 10 unauthenticated.
        << "MaxStartups 100\n"
        // A server whose PATH holds the torch environment (python3, torchrun), as users set theirs up.
        << "SetEnv PATH=" << std::filesystem::path(TB_TEST_PYTHON).parent_path().string()
        << ":/usr/local/bin:/usr/bin:/bin\n";
    auto host = [&](const std::string& alias, const std::string& key) {
      return "Host " + alias + "\n  HostName 127.0.0.1\n  Port " + std::to_string(port_) + "\n  User " + user +
             "\n  IdentityFile " + dir_ + "/" + key + "\n";
    };
    // Before `Host *`: ssh keeps the first value it reads of each option, SetEnv included.
    std::string named;
    for (const auto& n : names_) named += host("tb-" + n, "user_key") + "  SetEnv TMPDIR=" + remote_tmp(n) + "\n";
    std::ofstream(dir_ + "/ssh_config") << host("tbtest", "user_key") << host("tbbadkey", "bad_key") << named
                                        << "Host *\n  IdentitiesOnly yes\n"
                                        << "  UserKnownHostsFile " << dir_ << "/known_hosts\n"
                                        << "  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n"
                                        << "  SendEnv OMP_WAIT_POLICY\n"
                                        << "  SetEnv TMPDIR=" << dir_ << "/remote-tmp\n";
  }

  std::string launch() {
    pid_ = ::fork();
    if (pid_ == 0) {
      // Its sessions must not hold the test's output open (CTest waits for it to close).
      const int null = ::open("/dev/null", O_RDWR);
      for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
      const std::string cfg = dir_ + "/sshd_config", log = dir_ + "/sshd.log";
      ::execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-f", cfg.c_str(), "-E", log.c_str(), (char*)nullptr);
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "sshd exited at start: " + log();
      }
      if (std::system((ssh_command() + " -o BatchMode=yes -o ConnectTimeout=5 tbtest true >/dev/null 2>&1").c_str()) == 0)
        return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return "sshd did not answer within 15 s: " + log();
  }

  std::string dir_;
  std::vector<std::string> names_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace tb::test_util
