#!/usr/bin/env python3
"""A data-parallel group across two hosts (docs/distributed.md), with PyTorch's own launcher.

Two hosts made on this machine: each its own network namespace joined by a veth pair (10.77.0.1 and
10.77.0.2), its own host name (UTS namespace), its own pids (PID namespace) and its own CLOCK_MONOTONIC (a time
namespace one day ahead on the second host), which is what separates two real machines for the group. Then
`torchrun --nnodes 2 --node_rank R --master_addr 10.77.0.1` on each host, as a user starts a two-node job:

- `run --json --trace`: the ranks take the same steps and end with the same weights; each rank names its
  host; the second host's clock offset is measured within its stated error (the true offset is one day); in
  the merged trace every step of rank 1 overlaps the same step of rank 0 (DDP's all-reduce joins them), so
  rank 1's events are on rank 0's clock, not a day later;
- `serve`: a live group across the hosts: a knob set through rank 0's stdin reaches the other host, the end
  report names both hosts, and a trace chunk holds both ranks on one clock;
- `tune`: rank 0 tunes the live group across the hosts, rank 1 follows; a process knob is never tried;
- started from one machine over ssh (`run --remote h0,h1`, an sshd on each host): tunebench-cli starts
  torchrun on each, with the rendezvous at host 0's address as ssh reached it; the same checks as `run`;
- a silent network partition (host 0's firewall drops host 1's packets) while rank 1 waits for rank 0's next
  order: rank 1 ends within twice the group's timeout, saying the store no longer answers (no reset and no
  error ever reach it), and rank 0 reports the error. It has two hosts of its own (10.77.1.1 and .2), so that
  the checks above run beside it.

Needs root (network, PID, UTS and time namespaces), iproute2, util-linux's unshare, nftables and torchrun; exits 77
(skipped) without them. Usage: two_hosts.py TUNEBENCH_CLI
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# The launcher of the torch this test runs under (the project's environment), as a user runs theirs.
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")

DAY_NS = 86400 * 10**9


def skip(why):
    print("skipped: " + why)
    sys.exit(77)


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Hosts:
    """Two network namespaces joined by a veth pair (the `pair`-th of this test: 10.77.PAIR.1 and .2); removed on
    exit."""

    def __init__(self, pair):
        tag = "%dp%d" % (os.getpid() % 100000, pair)
        self.ns = ["tb%sh0" % tag, "tb%sh1" % tag]
        self.ifs = ["tb%sv0" % tag, "tb%sv1" % tag]
        self.addr = ["10.77.%d.1" % pair, "10.77.%d.2" % pair]

    def __enter__(self):
        try:
            for ns in self.ns:
                sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", self.ifs[0], "type", "veth", "peer", "name", self.ifs[1])
            for i in range(2):
                sh("ip", "link", "set", self.ifs[i], "netns", self.ns[i])
                sh("ip", "-n", self.ns[i], "addr", "add", self.addr[i] + "/24", "dev", self.ifs[i])
                sh("ip", "-n", self.ns[i], "link", "set", self.ifs[i], "up")
                sh("ip", "-n", self.ns[i], "link", "set", "lo", "up")
        except subprocess.CalledProcessError as e:
            self.__exit__()
            skip("cannot make network namespaces here: " + (e.stdout or "").strip())
        return self

    def __exit__(self, *exc):
        for ns in self.ns:
            sh("ip", "netns", "del", ns, check=False)

    def partition(self):
        """A silent partition: host 0's firewall drops every packet from and to host 1."""
        rules = ("table inet tbcut {\n"
                 "  chain i { type filter hook input priority 0; ip saddr %s drop; }\n"
                 "  chain o { type filter hook output priority 0; ip daddr %s drop; }\n"
                 "}\n") % (self.addr[1], self.addr[1])
        subprocess.run(["ip", "netns", "exec", self.ns[0], "nft", "-f", "-"], input=rules, text=True, check=True)

    def heal(self):
        """The partition's end: host 0's firewall lets host 1 through again (the checks after it need the link)."""
        sh("ip", "netns", "exec", self.ns[0], "nft", "delete", "table", "inet", "tbcut", check=False)

    def command(self, node, port, cli, args):
        """torchrun on host `node` (a day ahead on host 1), running `cli args`."""
        torchrun = " ".join([TORCHRUN, "--nnodes", "2", "--node_rank", str(node), "--nproc_per_node", "1",
                             "--master_addr", self.addr[0], "--master_port", str(port),
                             # 2: only stderr goes to torchrun's log files, stdout stays the command's.
                             "--redirects", "2", "--tee", "2", "--no_python", cli] + args)
        inner = "hostname tbhost%d && exec env GLOO_SOCKET_IFNAME=%s %s" % (node, self.ifs[node], torchrun)
        return ["ip", "netns", "exec", self.ns[node], "unshare", "--pid", "--fork", "--mount-proc", "--uts",
                "--time", "--monotonic", str(86400 * node), "sh", "-c", inner]


def trace_events(path):
    t = json.load(open(path))
    return t["traceEvents"] if isinstance(t, dict) else t


def steps_by_rank(events):
    """{rank name: {step index: (start_us, end_us)}} from the merged trace's step ranges."""
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    out = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name") == "step" and e["pid"] in names:
            idx = e.get("args", {}).get("step", e.get("args", {}).get("arg"))
            out.setdefault(names[e["pid"]], {})[idx] = (e["ts"], e["ts"] + e["dur"])
    return out


def check_one_clock(events, failures, what):
    """Every step both ranks recorded overlaps in time: the all-reduce ties them together."""
    by = steps_by_rank(events)
    if sorted(by) != ["rank 0 on tbhost0", "rank 1 on tbhost1"]:
        failures.append("%s: processes %s, want 'rank 0 on tbhost0' and 'rank 1 on tbhost1'" % (what, sorted(by)))
        return
    r0, r1 = by["rank 0 on tbhost0"], by["rank 1 on tbhost1"]
    common = sorted(set(r0) & set(r1))
    if not common:
        failures.append("%s: no step both ranks recorded" % what)
    for i in common:
        (a0, a1), (b0, b1) = r0[i], r1[i]
        if max(a0, b0) > min(a1, b1):
            failures.append("%s: step %s of rank 1 [%.0f, %.0f] us does not overlap rank 0's [%.0f, %.0f] us"
                            % (what, i, b0, b1, a0, a1))
            break


def run_on_both(hosts, port, cli, args, work, what, timeout, failures):
    """`cli args` under torchrun on both hosts (logs WHAT0.log, WHAT1.log); False, with the logs shown and a
    failure added, unless both end with 0."""
    logs = [os.path.join(work, "%s%d.log" % (what, node)) for node in range(2)]
    procs = [subprocess.Popen(hosts.command(node, port, cli, args), stdout=open(logs[node], "w"),
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL) for node in range(2)]
    codes = [p.wait(timeout=timeout) for p in procs]
    if codes == [0, 0]:
        return True
    for log in logs:
        sys.stdout.write(open(log).read()[-3000:])
    failures.append("%s: exit codes %s" % (what, codes))
    return False


def check_run_result(out, trace, failures, what):
    """A traced `run` of the two hosts: same weights, each rank's host, rank 1's clock measured a day apart
    within its error at the run's start and end, and every step of both ranks on one clock in the trace."""
    j = json.load(open(out))
    ranks = j["ranks"]
    if j.get("world_size") != 2 or len(ranks) != 2:
        failures.append(what + ": world_size %s with %d ranks" % (j.get("world_size"), len(ranks)))
        return
    if ranks[0]["parameter_digest"] != ranks[1]["parameter_digest"]:
        failures.append(what + ": the ranks' weights differ")
    d0, d1 = ranks[0]["distributed"], ranks[1]["distributed"]
    if (d0.get("host"), d1.get("host"), d1.get("hosts")) != ("tbhost0", "tbhost1", 2):
        failures.append(what + ": hosts %s, %s (of %s)" % (d0.get("host"), d1.get("host"), d1.get("hosts")))
    if d0.get("same_clock_as_rank0") is not True or d1.get("same_clock_as_rank0") is not False:
        failures.append(what + ": same_clock_as_rank0 %s, %s" % (d0.get("same_clock_as_rank0"),
                                                                  d1.get("same_clock_as_rank0")))
    offset, error = d1.get("clock_offset_ns"), d1.get("clock_error_ns")
    print(what + ": rank 1's clock offset %s ns (true -%d), error bound %s ns" % (offset, DAY_NS, error))
    if offset is None or error is None or abs(offset + DAY_NS) > error:
        failures.append(what + ": clock offset %s +- %s ns, the true one is -%d" % (offset, error, DAY_NS))
    # Measured when the group formed and again before the trace was collected (the run's two ends).
    samples = d1.get("clock_samples", [])
    print(what + ": rank 1's clock samples %s" % ["%+d ns +- %d at %d" % (s["offset_ns"] + DAY_NS, s["error_ns"], s["at_ns"])
                                                for s in samples])
    if len(samples) != 2 or samples[1]["at_ns"] <= samples[0]["at_ns"]:
        failures.append(what + ": rank 1's clock samples %s: want one at the start and one at the end" % samples)
    for s in samples:
        if abs(s["offset_ns"] + DAY_NS) > s["error_ns"]:
            failures.append(what + ": clock sample %s, the true offset is -%d" % (s, DAY_NS))
    check_one_clock(trace_events(trace), failures, what + " trace")


def check_run(hosts, cli, work, failures):
    args = ["run", "--model", "mnist_cnn", "--data", "synthetic", "--steps", "6", "--warmup", "2", "--set",
            "batch_size=4", "--dist-timeout", "30"]
    # The same command on every node, as users start torchrun: rank 0 writes, the others post to it.
    extra = ["--json", os.path.join(work, "run.json"), "--trace", os.path.join(work, "run.trace.json")]
    if not run_on_both(hosts, 29431, cli, args + extra, work, "run", 240, failures):
        return
    check_run_result(os.path.join(work, "run.json"), os.path.join(work, "run.trace.json"), failures, "run")


def check_serve(hosts, cli, work, failures):
    args = ["serve", "--model", "mnist_cnn", "--data", "synthetic", "--set", "batch_size=4", "--warmup", "1",
            "--drift-steps", "0", "--dist-timeout", "30", "--trace-dir", os.path.join(work, "chunks"),
            "--trace-every", "3"]
    log1 = open(os.path.join(work, "serve1.log"), "w")
    follower = subprocess.Popen(hosts.command(1, 29432, cli, args), stdout=log1, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    err0 = open(os.path.join(work, "serve0.log"), "w")
    leader = subprocess.Popen(hosts.command(0, 29432, cli, args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=err0, text=True, bufsize=1)
    steps, chunks, done, deadline = 0, [], None, time.time() + 240
    try:
        while time.time() < deadline:
            line = leader.stdout.readline()
            if not line:
                break
            m = json.loads(line)
            kind = m.get("type")
            if kind == "error":
                failures.append("serve: error %s" % m.get("message"))
            elif kind == "trace":
                chunks.append(m["path"])
            elif kind == "step":
                steps += 1
                if steps == 3:
                    leader.stdin.write(json.dumps({"v": 1, "type": "set", "knob": "bucket_cap_mb", "value": 5}) + "\n")
                if steps == 9:
                    leader.stdin.write(json.dumps({"v": 1, "type": "stop"}) + "\n")
                leader.stdin.flush()
            elif kind == "done":
                done = m
                break
        codes = [leader.wait(timeout=60), follower.wait(timeout=60)]
    finally:
        for p in (leader, follower):
            if p.poll() is None:
                p.kill()
    if done is None or codes != [0, 0]:
        for name in ("serve0.log", "serve1.log"):
            sys.stdout.write(open(os.path.join(work, name)).read()[-3000:])
        failures.append("serve: done %s, exit codes %s" % (done is not None, codes))
        return
    ranks = done["summary"].get("ranks", [])
    if [r.get("host") for r in ranks] != ["tbhost0", "tbhost1"]:
        failures.append("serve: done names hosts %s" % [r.get("host") for r in ranks])
    elif ranks[0]["config"] != ranks[1]["config"] or ranks[1]["config"].get("bucket_cap_mb") != "5":
        failures.append("serve: the set knob did not reach rank 1: %s" % ranks[1]["config"].get("bucket_cap_mb"))
    elif ranks[0]["parameter_digest"] != ranks[1]["parameter_digest"] or ranks[0]["steps"] != ranks[1]["steps"]:
        failures.append("serve: the ranks ended apart: %s" % ranks)
    if not chunks:
        failures.append("serve: no trace chunk")
    else:
        check_one_clock(trace_events(chunks[-1]), failures, "serve chunk")


def check_tune(hosts, cli, work, failures):
    """`tune` under torchrun on both hosts: rank 0 tunes the live group, rank 1 follows its orders and both end
    well; the tune says the group spans the hosts, and a process knob is never tried (a fresh group would start
    on one host). 10 s, the least budget: what the tuner decides is bench/bench_ranks.py's, and on a busy machine
    it may try nothing, which it then says."""
    out = os.path.join(work, "tune.json")
    args = ["tune", "--model", "mnist_cnn", "--data", "synthetic", "--set", "batch_size=4", "--budget", "10",
            "--knobs", "bucket_cap_mb,cpu_allocator", "--json", out, "--dist-timeout", "30"]
    if not run_on_both(hosts, 29434, cli, args, work, "tune", 240, failures):
        return
    j = json.load(open(out))
    env = j.get("environment", {})
    if env.get("ranks") != 2 or not any("spans 2 hosts" in w for w in env.get("engine_warnings", [])):
        failures.append("tune: ranks %s, warnings %s" % (env.get("ranks"), env.get("engine_warnings")))
    if any(t.get("knob") == "cpu_allocator" for t in j.get("trials", [])):
        failures.append("tune: cpu_allocator was tried across hosts: %s" % [t for t in j.get("trials", [])
                                                                            if t.get("knob") == "cpu_allocator"])
    if not j.get("ended"):
        failures.append("tune: no 'ended' line in %s" % sorted(j))


def check_partition(hosts, cli, work, failures, started=None):
    """The network between the hosts goes down while rank 1 waits for rank 0's next order (held back 15 s, as
    a long auto-tune trial holds it): no reset ever reaches rank 1, yet it must end within twice the group's
    timeout (5 s), saying why; rank 0 then fails its step at the collective timeout and reports it. The cut
    comes 3 s into the hold, so rank 1 ends (by 13 s) before rank 0 posts the order; the 25 s it is given here
    are a hang guard beyond that bound, and the time it took is printed."""
    args = ["serve", "--model", "mnist_cnn", "--data", "synthetic", "--set", "batch_size=4", "--warmup", "1",
            "--drift-steps", "0", "--dist-timeout", "5"]
    env = dict(os.environ, TUNEBENCH_TEST_ORDER_DELAY="10:15")
    log1 = os.path.join(work, "part1.log")
    follower = subprocess.Popen(hosts.command(1, 29433, cli, args), stdout=open(log1, "w"), stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)
    leader = subprocess.Popen(hosts.command(0, 29433, cli, args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=open(os.path.join(work, "part0.log"), "w"), text=True, bufsize=1, env=env)
    messages = queue.Queue()  # rank 0's protocol lines, read on a thread: a wait for the next has a timeout
    threading.Thread(target=lambda: [messages.put(json.loads(line)) for line in leader.stdout] + [messages.put(None)],
                     daemon=True).start()
    try:
        steps, cut = 0, None
        while cut is None:
            try:
                m = messages.get(timeout=3)
            except queue.Empty:
                if steps >= 5:  # rank 0 holds order 10 back: rank 1 waits for it
                    # Host 0 drops everything from and to host 1: packets vanish, no reset and no error come.
                    hosts.partition()
                    cut = time.time()
                continue
            if m is None:
                break
            steps += m.get("type") == "step"
            if steps and started:
                started.set()
        if cut is None:
            failures.append("partition: rank 0 ended before it held its order back (%d steps)" % steps)
            return
        said = ""
        while time.time() < cut + 25:
            said = open(log1).read()
            if "no longer answers" in said:
                break
            time.sleep(0.5)
        print("rank 1 ended %.1f s after the cut" % (time.time() - cut))
        if "no longer answers" not in said:
            failures.append("partition: rank 1 still waits 25 s after the cut (group timeout 5 s): " + said[-500:])
        # Rank 0 posts the order when its 15 s are up, and its step's all-reduce times out.
        error = done = None
        while done is None:
            try:
                m = messages.get(timeout=max(0.1, cut + 60 - time.time()))
            except queue.Empty:
                break
            if m is None:
                break
            error = m if m.get("type") == "error" else error
            done = m if m.get("type") == "done" else done
        if error is None or done is None or done["summary"].get("reason") != "error":
            failures.append("partition: rank 0 sent error %s, done %s" % (error, done))
    finally:
        if started:
            started.set()
        hosts.heal()
        for p in (leader, follower):
            if p.poll() is None:
                p.kill()


class NoSshd(Exception):
    pass


class Sshd:
    """An OpenSSH server on each host (in its namespaces: its address, host name, pids and clock), and an
    ssh_config that reaches them as h0 and h1, as a user's ~/.ssh/config reaches two GPU servers. Each host's
    sessions get GLOO_SOCKET_IFNAME (its interface) and a TMPDIR of the test's."""

    def __init__(self, hosts, work):
        self.hosts, self.dir, self.procs = hosts, os.path.join(work, "ssh"), []
        self.tmp = os.path.join(work, "remote-tmp")

    def start(self):
        os.makedirs(self.tmp)
        os.makedirs(self.dir)
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation directory
        for key in ("host_key", "user_key"):
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(self.dir, key))
        shutil.copy(os.path.join(self.dir, "user_key.pub"), os.path.join(self.dir, "authorized_keys"))
        config = ""
        for node in range(2):
            cfg = os.path.join(self.dir, "sshd%d_config" % node)
            with open(cfg, "w") as f:
                f.write("ListenAddress %s\nPort 22\nHostKey %s/host_key\nAuthorizedKeysFile %s/authorized_keys\n"
                        "PidFile none\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n"
                        "PasswordAuthentication no\nAcceptEnv TMPDIR GLOO_SOCKET_IFNAME OMP_WAIT_POLICY\n"
                        # A server whose PATH holds the torch environment, as users set theirs up.
                        "SetEnv PATH=%s:/usr/local/bin:/usr/bin:/bin\n"
                        % (self.hosts.addr[node], self.dir, self.dir, os.path.dirname(sys.executable)))
            inner = "hostname tbhost%d && exec /usr/sbin/sshd -D -f %s -E %s/sshd%d.log" % (node, cfg, self.dir, node)
            self.procs.append(subprocess.Popen(
                ["ip", "netns", "exec", self.hosts.ns[node], "unshare", "--pid", "--fork", "--kill-child",
                 "--mount-proc", "--uts", "--time", "--monotonic", str(86400 * node), "sh", "-c", inner],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            config += ("Host h%d\n  HostName %s\n  User root\n  IdentityFile %s/user_key\n  IdentitiesOnly yes\n"
                       "  UserKnownHostsFile %s/known_hosts\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n"
                       "  SetEnv TMPDIR=%s GLOO_SOCKET_IFNAME=%s\n  SendEnv OMP_WAIT_POLICY\n"
                       % (node, self.hosts.addr[node], self.dir, self.dir, self.tmp, self.hosts.ifs[node]))
        with open(os.path.join(self.dir, "ssh_config"), "w") as f:
            f.write(config)
        deadline = time.time() + 15
        for node in range(2):
            while sh(*self.client(["ssh", "-F", self.config(), "-o", "BatchMode=yes", "h%d" % node, "true"]),
                     check=False).returncode != 0:
                if time.time() > deadline:
                    self.stop()
                    raise NoSshd("sshd did not answer on host %d" % node)
                time.sleep(0.2)
        return self

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()

    def config(self):
        return os.path.join(self.dir, "ssh_config")

    def client(self, argv):
        """`argv` on host 0's network (the client machine of a cluster reaches both servers)."""
        return ["ip", "netns", "exec", self.hosts.ns[0]] + argv


def check_over_ssh(hosts, cli, work, failures):
    """The group started from one machine (`run --remote h0,h1`): tunebench-cli starts torchrun on each host over
    ssh, the rendezvous is host 0's address as ssh reached it (not loopback), and the run is the same as by hand:
    two hosts, rank 1's clock a day ahead and measured, one clock in the trace, nothing left on either host."""
    if not shutil.which("ssh") or not os.access("/usr/sbin/sshd", os.X_OK):
        print("over ssh: skipped, no ssh or sshd")
        return
    try:
        sshd = Sshd(hosts, work).start()
    except NoSshd as e:  # the environment, not TuneBench: said, and the other checks still count
        print("over ssh: skipped, %s" % e)
        return
    try:
        out, trace = os.path.join(work, "ssh.json"), os.path.join(work, "ssh.trace.json")
        r = subprocess.run(sshd.client(["env", "TUNEBENCH_SSH_COMMAND=ssh -F " + sshd.config(), cli, "run", "--remote",
                                        "h0,h1", "--remote-cli", cli, "--model", "mnist_cnn", "--data", "synthetic",
                                        "--steps", "6", "--warmup", "2", "--set", "batch_size=4", "--dist-timeout",
                                        "30", "--json", out, "--trace", trace]),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        said = [l for l in r.stdout.splitlines() if "rendezvous at" in l]
        print("over ssh: " + (said[0] if said else "no rendezvous line"))
        if r.returncode != 0:
            sys.stdout.write(r.stdout[-3000:])
            failures.append("over ssh: exit code %d" % r.returncode)
            return
        if not said or "rendezvous at %s:" % hosts.addr[0] not in said[0]:
            failures.append("over ssh: the rendezvous is not host 0's address: %s" % said)
        check_run_result(out, trace, failures, "over ssh")
        if os.listdir(sshd.tmp):
            failures.append("over ssh: left on the hosts: %s" % os.listdir(sshd.tmp))
    finally:
        sshd.stop()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: two_hosts.py TUNEBENCH_CLI")
    cli = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip("needs root for network, PID, UTS and time namespaces")
    for tool in ("ip", "unshare", TORCHRUN, "nft"):
        if not shutil.which(tool):
            skip(tool + " is not installed")
    probe = sh("unshare", "--time", "--monotonic", "1", "true", check=False)
    if probe.returncode != 0:
        skip("no time namespaces here: " + probe.stdout.strip())
    work = tempfile.mkdtemp(prefix="tb_two_hosts_")
    # Every child's temporary files under it (torchrun's agent leaves a torchelastic_* directory), removed with it.
    os.environ["TMPDIR"] = work
    failures = []

    def timed(check, hosts, *args):
        t0 = time.time()
        try:
            check(hosts, cli, work, failures, *args)
        except Exception as e:  # on a thread: said as a failure, not lost in a traceback
            traceback.print_exc()
            failures.append("%s: %r" % (check.__name__, e))
        print("%s: %.1f s" % (check.__name__, time.time() - t0))

    # The checks side by side (their ports and files are their own): most of their time is waiting (a tune's
    # budget, the partition's held order and timeouts). The partition cuts the network between its hosts, so it
    # has a pair of hosts of its own; its wait is the longest, so its group starts first, alone.
    with Hosts(0) as hosts, Hosts(1) as cut_hosts:
        started = threading.Event()
        threads = [threading.Thread(target=timed, args=(check_partition, cut_hosts, started))]
        threads[0].start()
        started.wait(120)
        threads += [threading.Thread(target=timed, args=(check, hosts))
                    for check in (check_run, check_serve, check_tune, check_over_ssh)]
        for t in threads[1:]:
            t.start()
        for t in threads:
            t.join()
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("ok: a run and a live group across two hosts, on one clock")
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
