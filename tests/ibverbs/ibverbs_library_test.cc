// uroce's libibverbs.so.1: it exports exactly the symbols and versions of
// Debian 12's rdma-core 44 (when that library is installed to compare with);
// every program the project must run loads against it with every symbol
// bound; ibv_devices and ibv_devinfo run unchanged and show the configured
// devices, an active Ethernet port and Soft-RoCE's GID table; verbs it does
// not serve fail with EOPNOTSUPP instead of crashing.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdlib.h>

#include <cstring>
#include <string>

#include "tests/support/program_environment.h"
#include "tests/support/run_command.h"

namespace uroce {
namespace {

using testing::RunResult;
using testing::installed;
using testing::run_shell;
using testing::sanitizer_environment;

const std::string kLibraryDir = UROCE_IBVERBS_DIR;
const std::string kRdmaCore = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1";

// Runs a program with uroce's library first on the search path.
RunResult run_with_uroce(const std::string& environment, const std::string& command) {
  return run_shell("env LD_LIBRARY_PATH=" + kLibraryDir + " " + sanitizer_environment() + environment + " " + command +
                   " 2>&1");
}

// Besides, at version UROCE_PRIVATE_1, what uroce's librdmacm needs (QP 1, and
// whether a QP has completions waiting).
TEST(IbverbsLibrary, ExportsRdmaCoresSymbolsWithTheirVersions) {
  if (run_shell("test -e " + kRdmaCore).exit_code != 0) GTEST_SKIP() << "rdma-core's libibverbs is not installed";
  std::string list = " | grep -v ' U \\| w ' | awk '{ print $3 }' | sort";
  RunResult ours = run_shell("nm -D --with-symbol-versions " + kLibraryDir + "/libibverbs.so.1" + list +
                             " | grep -v UROCE_PRIVATE_1");
  RunResult theirs = run_shell("nm -D --with-symbol-versions " + kRdmaCore + list);
  ASSERT_EQ(ours.exit_code, 0);
  EXPECT_GT(theirs.output.size(), 1000u);
  EXPECT_EQ(ours.output, theirs.output);
  RunResult ours_private = run_shell("nm -D --with-symbol-versions " + kLibraryDir + "/libibverbs.so.1" + list +
                                     " | grep UROCE_PRIVATE_1");
  EXPECT_EQ(ours_private.output,
            "UROCE_PRIVATE_1\nuroce_address_shared@@UROCE_PRIVATE_1\nuroce_create_gsi_qp@@UROCE_PRIVATE_1\n"
            "uroce_qp_has_completions_waiting@@UROCE_PRIVATE_1\n");
}

TEST(IbverbsLibrary, EveryProgramLoadsWithEverySymbolBound) {
  int checked = 0;
  for (const char* program :
       {"ibv_devices", "ibv_devinfo", "ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong",
        "ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_send_bw", "ib_send_lat", "ib_atomic_bw",
        "ib_atomic_lat"}) {
    if (!installed(program)) continue;
    ++checked;
    RunResult result = run_with_uroce("LD_BIND_NOW=1", std::string(program) + " --help");
    EXPECT_EQ(result.output.find("symbol lookup error"), std::string::npos) << program << ": " << result.output;
    EXPECT_EQ(result.output.find("undefined symbol"), std::string::npos) << program << ": " << result.output;
    EXPECT_NE(result.exit_code, 127) << program;
    RunResult libraries = run_with_uroce("", "ldd $(command -v " + std::string(program) + ")");
    EXPECT_NE(libraries.output.find(kLibraryDir + "/libibverbs.so.1"), std::string::npos) << libraries.output;
  }
  if (checked == 0) GTEST_SKIP() << "ibverbs-utils and perftest are not installed";
}

TEST(IbverbsLibrary, IbvDevicesListsTheConfiguredDevices) {
  if (!installed("ibv_devices")) GTEST_SKIP() << "ibverbs-utils is not installed";
  RunResult result = run_with_uroce("UROCE_ADDRESS=127.0.4.2,127.0.4.3", "ibv_devices");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("uroce0"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("uroce1"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("00007ffffe000402"), std::string::npos) << result.output;  // EUI-64 of 02:00:7f:00:04:02
}

TEST(IbverbsLibrary, IbvDevinfoShowsAnActiveEthernetPortAndSoftRocesGidTable) {
  if (!installed("ibv_devinfo")) GTEST_SKIP() << "ibverbs-utils is not installed";
  RunResult result = run_with_uroce("UROCE_ADDRESS=127.0.4.4", "ibv_devinfo -v");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  for (const char* expected : {"hca_id:\turoce0", "PORT_ACTIVE (4)", "link_layer:\t\tEthernet", "active_mtu:\t\t4096 (5)",
                               "GID[  0]:\t\tfe80::7fff:fe00:404, RoCE v2", "GID[  1]:\t\t::ffff:127.0.4.4, RoCE v2",
                               "atomic_cap:\t\t\tATOMIC_HCA (1)"}) {
    EXPECT_NE(result.output.find(expected), std::string::npos) << expected << "\n" << result.output;
  }
}

// Calls into the library directly (dlopen, as no program is linked to it here).
class LoadedLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("UROCE_ADDRESS", "127.0.4.5", 1);
    handle_ = ::dlopen((kLibraryDir + "/libibverbs.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
  }
  void TearDown() override {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  template <class F>
  F* function(const char* name, const char* version = nullptr) {
    void* symbol = version ? ::dlvsym(handle_, name, version) : ::dlsym(handle_, name);
    EXPECT_NE(symbol, nullptr) << name;
    return reinterpret_cast<F*>(symbol);
  }
  void* handle_ = nullptr;
};

TEST_F(LoadedLibrary, QueriesAnswerAndUnservedVerbsFailWithEopnotsupp) {
  auto* get_device_list = function<ibv_device**(int*)>("ibv_get_device_list", "IBVERBS_1.1");
  auto* open_device = function<ibv_context*(ibv_device*)>("ibv_open_device", "IBVERBS_1.1");
  auto* close_device = function<int(ibv_context*)>("ibv_close_device", "IBVERBS_1.1");
  auto* free_device_list = function<void(ibv_device**)>("ibv_free_device_list", "IBVERBS_1.1");
  auto* query_gid = function<int(ibv_context*, uint8_t, int, ibv_gid*)>("ibv_query_gid", "IBVERBS_1.1");
  auto* query_gid_ex =
      function<int(ibv_context*, uint32_t, uint32_t, ibv_gid_entry*, uint32_t, size_t)>("_ibv_query_gid_ex");
  auto* alloc_pd = function<ibv_pd*(ibv_context*)>("ibv_alloc_pd", "IBVERBS_1.1");
  auto* dealloc_pd = function<int(ibv_pd*)>("ibv_dealloc_pd", "IBVERBS_1.1");
  auto* reg_dmabuf_mr = function<ibv_mr*(ibv_pd*, uint64_t, size_t, uint64_t, int, int)>("ibv_reg_dmabuf_mr");
  auto* attach_mcast = function<int(ibv_qp*, const ibv_gid*, uint16_t)>("ibv_attach_mcast", "IBVERBS_1.1");
  auto* old_open_device = function<void*(ibv_device*)>("ibv_open_device", "IBVERBS_1.0");
  ASSERT_TRUE(get_device_list && open_device && close_device && free_device_list && query_gid && query_gid_ex &&
              alloc_pd && dealloc_pd && reg_dmabuf_mr && attach_mcast && old_open_device);

  int count = 0;
  ibv_device** list = get_device_list(&count);
  ASSERT_EQ(count, 1);
  ibv_context* context = open_device(list[0]);
  ASSERT_NE(context, nullptr);

  // The header's inline ibv_query_port finds the extended operation through
  // verbs_get_ctx (then checks sz covers the op and the op is set).
  verbs_context* extended = verbs_get_ctx(context);
  ASSERT_NE(extended, nullptr);
  EXPECT_EQ(extended->sz, sizeof(verbs_context));
  ASSERT_NE(extended->query_port, nullptr);
  ibv_port_attr port;
  ASSERT_EQ(extended->query_port(context, 1, &port, sizeof port), 0);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(extended->query_port(context, 2, &port, sizeof port), EINVAL);
  EXPECT_NE(extended->query_device_ex, nullptr);

  ibv_gid gid;
  ASSERT_EQ(query_gid(context, 1, 1, &gid), 0);
  EXPECT_EQ(gid.raw[10], 0xFF);
  EXPECT_EQ(gid.raw[15], 5);  // ::ffff:127.0.4.5
  ASSERT_EQ(query_gid(context, 1, 7, &gid), 0);  // past the table: a zero GID, as the kernel's reads
  EXPECT_EQ(gid.global.interface_id, 0u);
  ibv_gid_entry entry;
  EXPECT_EQ(query_gid_ex(context, 1, 1, &entry, 0, sizeof entry), 0);
  EXPECT_EQ(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(query_gid_ex(context, 1, 7, &entry, 0, sizeof entry), ENODATA);

  // The first PD opens the device (UDP 4791 on 127.0.4.5); what uroce does
  // not serve fails with EOPNOTSUPP.
  ibv_pd* pd = alloc_pd(context);
  ASSERT_NE(pd, nullptr) << std::strerror(errno);
  errno = 0;
  EXPECT_EQ(reg_dmabuf_mr(pd, 0, 4096, 0, 3, 0), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_mw* window = context->ops.alloc_mw(pd, IBV_MW_TYPE_2);  // memory windows are served
  ASSERT_NE(window, nullptr) << std::strerror(errno);
  EXPECT_EQ(window->type, IBV_MW_TYPE_2);
  EXPECT_EQ(context->ops.dealloc_mw(window), 0);
  errno = 0;
  EXPECT_EQ(context->ops.alloc_mw(pd, static_cast<ibv_mw_type>(3)), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(attach_mcast(nullptr, &gid, 0), EINVAL);  // multicast is served; no QP is EINVAL
  EXPECT_EQ(dealloc_pd(pd), 0);
  errno = 0;
  EXPECT_EQ(old_open_device(list[0]), nullptr);  // the 2006 ABI is not served
  EXPECT_EQ(errno, EOPNOTSUPP);

  EXPECT_EQ(close_device(context), 0);
  free_device_list(list);
}

}  // namespace
}  // namespace uroce
