// The distributed collective interface (Note [Process groups]): one rank, collectives that keep
// their tensor, torch's checks and errors; NCCL on a GPU machine only.
#include <gtest/gtest.h>

#include "retorch/device/DeviceApi.h"
#include "retorch/distributed/ProcessGroup.h"
#include "test_helpers.h"

namespace {

using namespace retorch;
namespace dist = retorch::distributed;
using retorch::testing::catch_error;
using retorch::testing::contains;
using retorch::testing::values;

TEST(Distributed, OneGlooRankKeepsTensorsAndChecksLikeTorch) {
  EXPECT_TRUE(contains(catch_error([] { dist::get_rank(); }).what(),
                       {"Default process group has not been initialized"}));
  dist::init_process_group("gloo");
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_EQ(dist::get_rank(), 0);
  EXPECT_EQ(dist::get_world_size(), 1);
  Tensor t = arange(6, TensorOptions(kFloat)).reshape({2, 3});
  const std::vector<double> before = values(t);
  for (dist::ReduceOp op : {dist::ReduceOp::kSum, dist::ReduceOp::kProduct, dist::ReduceOp::kMax,
                            dist::ReduceOp::kMin, dist::ReduceOp::kAvg}) {
    dist::all_reduce(t, op);
    EXPECT_EQ(values(t), before);
  }
  dist::broadcast(t, 0);
  dist::barrier();
  EXPECT_EQ(values(t), before);
  EXPECT_TRUE(contains(catch_error([&] { dist::broadcast(t, 1); }).what(),
                       {"src rank 1 is not in a group of 1"}));
  EXPECT_TRUE(contains(catch_error([&] { dist::all_reduce(t.t()); }).what(),
                       {"all_reduce: tensors must be contiguous"}));
  EXPECT_TRUE(contains(catch_error([] { dist::init_process_group("gloo"); }).what(),
                       {"already initialized"}));
  dist::destroy_process_group();
  EXPECT_FALSE(dist::is_initialized());
  EXPECT_TRUE(contains(catch_error([] { dist::init_process_group("mpi"); }).what(),
                       {"unknown backend 'mpi'"}));
  EXPECT_TRUE(contains(catch_error([] { dist::init_process_group("gloo", 1, 2); }).what(),
                       {"world_size 2 needs a rendezvous"}));
  EXPECT_TRUE(contains(catch_error([] { dist::init_process_group("gloo", 2, 2); }).what(),
                       {"rank 2 is not in a world of size 2"}));
  EXPECT_FALSE(dist::is_initialized());
}

TEST(Distributed, NcclNeedsADeviceAndAllReducesOnOne) {
  if (!cuda::is_available()) {
    EXPECT_TRUE(contains(catch_error([] { dist::init_process_group("nccl"); }).what(),
                         {"init_process_group: the nccl backend needs"}));
    EXPECT_FALSE(dist::is_initialized());
    GTEST_SKIP() << "no CUDA device";
  }
  dist::init_process_group("nccl");
  Tensor t = arange(1000, TensorOptions(kFloat)).to(Device(kCUDA));
  dist::all_reduce(t);
  cuda::synchronize();
  EXPECT_EQ(values(t.to(Device(kCPU))), values(arange(1000, TensorOptions(kFloat))));
  EXPECT_TRUE(contains(catch_error([] { dist::all_reduce(ones({3})); }).what(),
                       {"the nccl backend takes CUDA tensors"}));
  dist::destroy_process_group();
}

}  // namespace
