// The self-test cache's files (io/private_files.h, issue 50): only the user's own directory and
// regular files; a FIFO, a link, a directory, a file of another user or a file in place of the
// folder is refused at once (never a hang, never a write through a link) with a sentence saying
// which, and the caller goes on without the cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "io/private_files.h"

using namespace moss;

namespace {

std::string fresh_dir(const char* name) {
  std::string tmpl = ::testing::TempDir() + "private_" + name + "_XXXXXX";
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST(PrivateFiles, OwnRegularFilesWork) {
  const std::string dir = fresh_dir("ok") + "/a/b";
  EXPECT_EQ(private_dir_refusal(dir), "");
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string text, why;
  EXPECT_TRUE(read_private_file(dir + "/missing", text, why));
  EXPECT_EQ(text, "");
  for (int i = 0; i < 2; ++i) {
    const int fd = open_private_file(dir + "/f", WriteMode::Append, why);
    ASSERT_GE(fd, 0) << why;
    ASSERT_EQ(write(fd, "line\n", 5), 5);
    close(fd);
  }
  EXPECT_TRUE(read_private_file(dir + "/f", text, why)) << why;
  EXPECT_EQ(text, "line\nline\n");
  const int fd = open_private_file(dir + "/f", WriteMode::Replace, why);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(slurp(dir + "/f"), "");
}

TEST(PrivateFiles, EveryOtherKindIsRefusedAtOnce) {
  const std::string dir = fresh_dir("kinds");
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "keep me";
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/link").c_str()), 0);
  ASSERT_EQ(mkdir((dir + "/sub").c_str(), 0700), 0);
  const struct {
    const char* name;
    const char* says;
  } cases[] = {{"fifo", "a FIFO"}, {"link", "symbolic link"}, {"sub", "a directory"}};
  for (const auto& c : cases) {
    const std::string path = dir + "/" + c.name;
    const auto t0 = std::chrono::steady_clock::now();
    std::string text, why;
    EXPECT_FALSE(read_private_file(path, text, why)) << c.name;
    EXPECT_NE(why.find(c.says), std::string::npos) << c.name << ": " << why;
    for (WriteMode mode : {WriteMode::Append, WriteMode::Replace}) {
      why.clear();
      EXPECT_EQ(open_private_file(path, mode, why), -1) << c.name;
      EXPECT_FALSE(why.empty()) << c.name;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << c.name << " blocked";
  }
  EXPECT_EQ(slurp(victim), "keep me");  // never truncated through the link
  // A regular file, or a link, where the folder should be.
  EXPECT_NE(private_dir_refusal(victim).find("not a directory"), std::string::npos);
  ASSERT_EQ(symlink((dir + "/sub").c_str(), (dir + "/dirlink").c_str()), 0);
  EXPECT_NE(private_dir_refusal(dir + "/dirlink").find("symbolic link"), std::string::npos);
  EXPECT_NE(private_dir_refusal(victim + "/below").find("cannot be made"), std::string::npos);
  EXPECT_NE(private_dir_refusal("").find("no cache folder"), std::string::npos);
}

TEST(PrivateFiles, AnotherUsersFileIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  const std::string dir = fresh_dir("owner");
  const std::string path = dir + "/theirs";
  std::ofstream(path) << "theirs";
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  // Root may read anything; the check is of the owner, as it is for every other user.
  std::string text, why;
  EXPECT_FALSE(read_private_file(path, text, why));
  EXPECT_NE(why.find("belongs to another user (uid 65534)"), std::string::npos) << why;
  EXPECT_EQ(open_private_file(path, WriteMode::Replace, why), -1);
  EXPECT_EQ(slurp(path), "theirs");
  ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0);
  EXPECT_NE(private_dir_refusal(dir).find("belongs to another user"), std::string::npos);
}
