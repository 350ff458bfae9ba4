package bench

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
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
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
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
