// The collective backend of a data-parallel rank (engine/distributed.h, dist/ddp.h): which one a rank takes on
// which device and build, TUNEBENCH_DIST_BACKEND, and a real one-rank group with the Reducer on each backend
// this build has (Gloo here; NCCL too in the CUDA build on a GPU box, where the same tests run).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "compat.h"
#include "dist/ddp.h"
#include "engine/distributed.h"

namespace tb::engine {
namespace {

TEST(DistBackend, ChoiceFollowsTheDeviceTheBuildAndTheGpus) {
  // A CPU run: Gloo whatever the build; nccl asked for is refused with the reason.
  EXPECT_EQ(choose_dist_backend("auto", false, true, 8, 2).name, "gloo");
  EXPECT_TRUE(choose_dist_backend("auto", false, true, 8, 2).note.empty());
  auto cpu_nccl = choose_dist_backend("nccl", false, true, 8, 2);
  EXPECT_NE(cpu_nccl.error.find("needs --device cuda"), std::string::npos) << cpu_nccl.error;

  // A GPU per rank and NCCL in the build: NCCL, silently, as PyTorch's default for CUDA tensors.
  auto gpu = choose_dist_backend("auto", true, true, 2, 2);
  EXPECT_EQ(gpu.name, "nccl");
  EXPECT_TRUE(gpu.note.empty() && gpu.error.empty());
  EXPECT_EQ(choose_dist_backend("nccl", true, true, 4, 2).name, "nccl");

  // Two ranks on one GPU: NCCL refuses that (its communicator rejects a duplicate GPU), so auto falls back to
  // Gloo and says so; nccl asked for is refused before any process group forms.
  auto shared = choose_dist_backend("auto", true, true, 1, 2);
  EXPECT_EQ(shared.name, "gloo");
  EXPECT_NE(shared.note.find("2 ranks on this machine and 1 GPU"), std::string::npos) << shared.note;
  EXPECT_NE(shared.note.find("through host memory"), std::string::npos) << shared.note;
  auto shared_nccl = choose_dist_backend("nccl", true, true, 1, 2);
  EXPECT_NE(shared_nccl.error.find("NCCL needs a GPU per rank"), std::string::npos) << shared_nccl.error;

  // No NCCL in the build: auto on a GPU says so; nccl asked for is an error; gloo is obeyed with a note.
  auto none = choose_dist_backend("auto", true, false, 2, 2);
  EXPECT_EQ(none.name, "gloo");
  EXPECT_NE(none.note.find("this build has no NCCL"), std::string::npos) << none.note;
  EXPECT_NE(choose_dist_backend("nccl", true, false, 2, 2).error.find("this build has no NCCL"), std::string::npos);
  auto gloo = choose_dist_backend("gloo", true, true, 2, 2);
  EXPECT_EQ(gloo.name, "gloo");
  EXPECT_TRUE(gloo.error.empty());
}

TEST(DistBackend, TheEnvironmentNamesItAndABadNameIsAnError) {
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "1", 1);
  ::setenv("MASTER_PORT", "29500", 1);
  ::setenv("TUNEBENCH_DIST_BACKEND", "gloo", 1);
  auto d = dist_from_env();
  ASSERT_TRUE(d && *d) << (d ? "" : d.error().message);
  EXPECT_EQ((*d)->backend, "gloo");
  ::setenv("TUNEBENCH_DIST_BACKEND", "mpi", 1);
  d = dist_from_env();
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "TUNEBENCH_DIST_BACKEND='mpi' is not auto, gloo or nccl");
  ::unsetenv("TUNEBENCH_DIST_BACKEND");
  d = dist_from_env();
  ASSERT_TRUE(d && *d) << (d ? "" : d.error().message);
  EXPECT_EQ((*d)->backend, "auto");
  for (const char* k : {"WORLD_SIZE", "RANK", "MASTER_PORT"}) ::unsetenv(k);
}

// One rank, a real process group and PyTorch's Reducer: the gradients after backward are the plain ones (the
// mean over one rank), and the group's collectives work on the backend's device. On the CUDA build this runs
// the c10d 2.x code paths (a ProcessGroup holding backends), which Debian's 1.13 never reaches.
void expect_one_rank_ddp_matches_plain(const std::string& backend, torch::Device device) {
  DistOptions o;
  o.master_port = free_tcp_port();
  ASSERT_GT(o.master_port, 0);
  o.timeout_s = 30;
  auto group = std::make_shared<dist::Group>(o, backend);
  EXPECT_EQ(group->backend(), backend);

  std::vector<torch::Tensor> v{torch::full({3}, 2.0, torch::TensorOptions().device(device))};
  group->pg()->allreduce(v)->wait();
  EXPECT_TRUE(torch::allclose(v[0].cpu(), torch::full({3}, 2.0))) << "a sum over one rank";

  torch::manual_seed(3);
  torch::nn::Linear ddp_model(6, 4), plain(6, 4);
  {
    torch::NoGradGuard ng;
    plain->weight.copy_(ddp_model->weight);
    plain->bias.copy_(ddp_model->bias);
  }
  ddp_model->to(device);
  plain->to(device);
  dist::Ddp ddp(group, ddp_model->parameters(), {}, dist::DdpSettings{});
  const auto x = torch::randn({5, 6}).to(device);
  for (int step = 0; step < 2; ++step) {  // the second step runs on the rebuilt buckets
    ddp_model->zero_grad();
    plain->zero_grad();
    ddp.before_forward(true);
    auto loss = ddp_model->forward(x).pow(2).sum();
    ddp.before_backward(true);
    loss.backward();
    ddp.after_backward(true);
    plain->forward(x).pow(2).sum().backward();
    EXPECT_TRUE(torch::allclose(ddp_model->weight.grad().cpu(), plain->weight.grad().cpu())) << "step " << step;
    EXPECT_TRUE(torch::allclose(ddp_model->bias.grad().cpu(), plain->bias.grad().cpu())) << "step " << step;
  }
  EXPECT_EQ(ddp.describe()["backend"], backend);
  EXPECT_EQ(ddp.describe()["iterations"], 2);
}

TEST(DistGroup, OneRankGlooGroupReducesLikePlainTraining) { expect_one_rank_ddp_matches_plain("gloo", torch::kCPU); }

TEST(DistGroup, OneRankNcclGroupReducesOnTheGpu) {
  if (!nccl_built()) GTEST_SKIP() << "this build has no NCCL (a CPU LibTorch): the CUDA build on a GPU runs this";
  if (!compat::cuda_available()) GTEST_SKIP() << "no CUDA device";
  compat::set_cuda_device(0);
  expect_one_rank_ddp_matches_plain("nccl", torch::Device(torch::kCUDA, 0));
}

}  // namespace
}  // namespace tb::engine
