package bench

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Machine describes where a benchmark ran.
type Machine struct {
	Cores     int    `json:"cores"`
	CPUModel  string `json:"cpuModel"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Commit    string `json:"commit"`
	// LoadAverage is /proc/loadavg's 1, 5 and 15 minute load when the run
	// started: numbers from a busy (shared) machine are not comparable
	// with a quiet one's.
	LoadAverage string `json:"loadAverage,omitempty"`
	// Kernel is the Linux release (/proc/sys/kernel/osrelease).
	Kernel string `json:"kernel,omitempty"`
	// MemTotalMiB is /proc/meminfo's MemTotal.
	MemTotalMiB int `json:"memTotalMiB,omitempty"`
	// TransparentHugePages is the kernel's THP mode (always, madvise or
	// never): with "always" anonymous memory is backed by 2 MiB pages
	// where it can be, so the resident and anonymous memory the memory
	// benchmarks report are not comparable across modes.
	TransparentHugePages string `json:"transparentHugePages,omitempty"`
}

// ThisMachine reads the machine description (CPU model from /proc/cpuinfo,
// commit from git when run inside the repository).
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, CPUModel: "unknown", Commit: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			m.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotalMiB = memTotalMiB(string(data))
	}
	if data, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil {
		m.TransparentHugePages = selectedMode(string(data))
	}
	var settings []debug.BuildSetting
	if info, ok := debug.ReadBuildInfo(); ok {
		settings = info.Settings
	}
	m.Commit = commitOf(settings, repositoryHead)
	return m
}

// modulePath is this repository's Go module, which tells its checkouts
// from other repositories.
const modulePath = "github.com/kubeproof/kubeproof"

// commitOf names the kubeproof commit measured: the revision Go stamped
// into the binary (its first 12 digits, "-dirty" when the tree was
// modified); for a binary built without it (go run, -buildvcs=false),
// the HEAD of the repository the process runs in when that repository
// is kubeproof's (repo gives its module path and short HEAD); else
// "unknown", never another project's commit.
func commitOf(settings []debug.BuildSetting, repo func() (module, head string, ok bool)) string {
	var revision, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		if modified == "true" {
			revision += "-dirty"
		}
		return revision
	}
	if module, head, ok := repo(); ok && module == modulePath {
		return head
	}
	return "unknown"
}

// repositoryHead is the module path (go.mod's module line at the
// repository's top level) and short HEAD of the git repository holding
// the working directory.
func repositoryHead() (module, head string, ok bool) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel", "--short", "HEAD").Output()
	if err != nil {
		return "", "", false
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		return "", "", false
	}
	gomod, err := os.ReadFile(filepath.Join(lines[0], "go.mod"))
	if err != nil {
		return "", "", false
	}
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "module "); found {
			return strings.Trim(strings.TrimSpace(rest), `"`), lines[1], true
		}
	}
	return "", "", false
}

// memTotalMiB is the MemTotal line of /proc/meminfo's content, in MiB; 0
// when there is none.
func memTotalMiB(meminfo string) int {
	for _, line := range strings.Split(meminfo, "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.Atoi(f[0]); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

// selectedMode is the bracketed choice of a sysfs mode file such as
// "always [madvise] never"; "" when none is bracketed.
func selectedMode(content string) string {
	_, rest, ok := strings.Cut(content, "[")
	if !ok {
		return ""
	}
	mode, _, ok := strings.Cut(rest, "]")
	if !ok {
		return ""
	}
	return mode
}
