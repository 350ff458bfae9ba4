package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestThisMachineCommitIgnoresOtherRepositories: a benchmark run from
// inside another project's repository recorded that project's HEAD as
// the commit measured; the commit is kubeproof's or "unknown".
func TestThisMachineCommitIgnoresOtherRepositories(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "other project"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if got := ThisMachine().Commit; got != "unknown" {
		t.Errorf("commit %q inside another repository, want unknown", got)
	}
}

// TestCommitOf: the revision Go stamped into the binary first; else the
// HEAD of the kubeproof repository the process runs in; else unknown.
func TestCommitOf(t *testing.T) {
	stamped := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	kubeproof := func() (string, string, bool) { return "github.com/kubeproof/kubeproof", "fedcba98", true }
	other := func() (string, string, bool) { return "example.com/other", "11112222", true }
	none := func() (string, string, bool) { return "", "", false }
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		repo     func() (string, string, bool)
		want     string
	}{
		{"stamped", stamped, other, "0123456789ab"},
		{"stamped dirty", dirty, kubeproof, "0123456789ab-dirty"},
		{"unstamped in kubeproof", nil, kubeproof, "fedcba98"},
		{"unstamped elsewhere", nil, other, "unknown"},
		{"unstamped outside any repository", nil, none, "unknown"},
	} {
		if got := commitOf(tc.settings, tc.repo); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
