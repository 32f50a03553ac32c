// `retorch ir FILE [--passes a,b]`: runs the built command on graph files and checks what it
// prints, its exit status and its errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace {

struct CliRun {
  int status = -1;     // the exit code; -1 when the command died of a signal
  std::string output;  // stdout and stderr together
};

CliRun run_cli(const std::string& args) {
  CliRun r;
  FILE* p = ::popen((std::string(RETORCH_CLI) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) r.output.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("retorch_ir_cli_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

const char* kIfGraph =
    "graph(%c : bool,\n"
    "      %x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):\n"
    "  %2 : Tensor = prim::If(%c) # model.py:7:4\n"
    "    block0():\n"
    "      %3 : Tensor = aten::relu(%x)\n"
    "      -> (%3)\n"
    "    block1():\n"
    "      -> (%x)\n"
    "  %4 : int = prim::Constant[value=1]()\n"
    "  %5 : Tensor = aten::add(%2, %x, %4)\n"
    "  return (%5)\n";

}  // namespace

TEST(IrCli, PrintsTheParsedGraph) {
  std::string f = write_temp("if.txt", kIfGraph);
  CliRun r = run_cli("ir " + f);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, kIfGraph);
  r = run_cli("ir " + f + " --passes lint");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, kIfGraph);
  // Loose spacing and comments come out in the printer's layout.
  std::string loose = write_temp("loose.txt",
                                 "# hand-written\n"
                                 "graph(%a : Tensor, %b : Tensor):\n"
                                 "  %c : Tensor = aten::mul(%a,%b)   #  f.py:1  \n"
                                 "  return (%c)");
  r = run_cli("ir " + loose);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output,
            "graph(%a : Tensor,\n"
            "      %b : Tensor):\n"
            "  %c : Tensor = aten::mul(%a, %b) # f.py:1\n"
            "  return (%c)\n");
  std::filesystem::remove(f);
  std::filesystem::remove(loose);
}

TEST(IrCli, MalformedFilesAndUnknownPassesAreClearErrors) {
  std::string bad = write_temp("bad.txt",
                               "graph(%x : Tensor):\n"
                               "  %1 : Tensor = aten::relu(%x)\n"
                               "  %2 : Tensor = aten::no_such_op(%1)\n"
                               "  return (%2)\n");
  CliRun r = run_cli("ir " + bad);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("retorch: error: " + bad + ": jit: parse error at line 3, column 17"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("unknown operator aten::no_such_op"), std::string::npos) << r.output;

  std::string truncated = write_temp("trunc.txt", "graph(%x : Float(2, 3, strides=[3");
  r = run_cli("ir " + truncated);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("line 1, column 34"), std::string::npos) << r.output;

  std::string good = write_temp("good.txt", kIfGraph);
  r = run_cli("ir " + good + " --passes lint,no_such_pass");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("unknown pass 'no_such_pass' (known passes: "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("lint"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("graph("), std::string::npos) << "no graph is printed on error";

  r = run_cli("ir /nonexistent/graph.txt");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("cannot open '/nonexistent/graph.txt'"), std::string::npos) << r.output;
  for (const auto& p : {bad, truncated, good}) std::filesystem::remove(p);
}

TEST(IrCli, PassesRewriteTheGraphAndLogWhenAsked) {
  // Two identical muls (CSE merges them) and a dead relu (DCE removes it).
  std::string f = write_temp("cse.txt",
                             "graph(%a : Tensor,\n"
                             "      %b : Tensor):\n"
                             "  %2 : Tensor = aten::mul(%a, %b)\n"
                             "  %3 : Tensor = aten::mul(%a, %b)\n"
                             "  %4 : Tensor = aten::relu(%a)\n"
                             "  %5 : int = prim::Constant[value=1]()\n"
                             "  %6 : Tensor = aten::add(%2, %3, %5)\n"
                             "  return (%6)\n");
  CliRun r = run_cli("ir " + f + " --passes cse,dce");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output,
            "graph(%a : Tensor,\n"
            "      %b : Tensor):\n"
            "  %2 : Tensor = aten::mul(%a, %b)\n"
            "  %5 : int = prim::Constant[value=1]()\n"
            "  %6 : Tensor = aten::add(%2, %2, %5)\n"
            "  return (%6)\n");
  // RETORCH_JIT_LOG prints the graph before and after the named pass (on stderr).
  r = run_cli("ir " + f + " --passes cse,dce 2>&1 >/dev/null");
  EXPECT_EQ(r.output.find("[jit]"), std::string::npos) << r.output;
  CliRun logged;
  {
    FILE* p = ::popen(("RETORCH_JIT_LOG=dce " + std::string(RETORCH_CLI) + " ir " + f +
                       " --passes cse,dce 2>&1 >/dev/null").c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) logged.output.append(buf, n);
    ::pclose(p);
  }
  EXPECT_NE(logged.output.find("[jit] before dce"), std::string::npos) << logged.output;
  EXPECT_NE(logged.output.find("[jit] after dce"), std::string::npos) << logged.output;
  EXPECT_EQ(logged.output.find("before cse"), std::string::npos) << logged.output;
  std::filesystem::remove(f);
}
