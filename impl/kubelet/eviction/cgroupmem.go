package eviction

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory signals of a CRI node, as upstream's kubelet measures them: its
// summary provider reads cadvisor's stats of a cgroup, whose memory
// working set is the cgroup's usage less its inactive file pages, and
// whose available memory is its memory limit less that working set
// (pkg/kubelet/stats helper.go, cadvisorInfoToCPUandMemoryStats); the
// eviction manager's memory.available is the root cgroup's and
// allocatableMemory.available the pods cgroup's (kubepods)
// (makeSignalObservations), each of capacity available + working set.
//
//   - Root cgroup: its memory limit is the machine's memory capacity,
//     /proc/meminfo's MemTotal (cadvisor's raw handler, GetSpec of "/");
//     its usage is memory.usage_in_bytes on cgroup v1 and, as cgroup v2's
//     root has no memory.current, memory.stat's anon + file on v2 (runc's
//     fs2 statMemory falling back to rootStatsFromMeminfo).
//   - Pods cgroup: its limit is memory.limit_in_bytes (v1) or memory.max
//     (v2); unlimited ("max", or above 2^62 as cgroup v1 writes "no
//     limit": upstream's isMemoryUnlimited) gives no available amount, so
//     no observation, as a node that does not enforce "pods" has. Its
//     usage is memory.usage_in_bytes (v1) or memory.current (v2).
//   - Working set: usage less memory.stat's total_inactive_file (v1) or
//     inactive_file (v2) when memory.stat has it, never below 0
//     (cadvisor's setMemoryStats).
//
// The arithmetic is pure over the files' text (nodeMemoryObservation,
// podsMemoryObservation); readCgroupMemory is the thin reader.

// cgroupMemoryFiles are the text of the files one memory observation
// reads; a file not read (or not there) is "".
type cgroupMemoryFiles struct {
	// Usage is memory.usage_in_bytes (v1) or memory.current (v2; the
	// root cgroup has none).
	Usage string
	// Limit is memory.limit_in_bytes (v1) or memory.max (v2); not read
	// for the root cgroup.
	Limit string
	// Stat is memory.stat.
	Stat string
}

// memoryUnlimited is upstream's isMemoryUnlimited bound: a limit above
// it is no limit (cgroup v1 writes its "no limit" rounded to pages).
const memoryUnlimited = int64(1) << 62

// parseMemoryStat reads memory.stat's "key value" lines.
func parseMemoryStat(text string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("memory.stat: malformed line %q", line)
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("memory.stat: %s: %w", fields[0], err)
		}
		out[fields[0]] = v
	}
	return out, nil
}

// workingSet is cadvisor's working set of a cgroup of usage bytes and
// memory.stat stat: usage less the inactive file pages (total_inactive_file
// on cgroup v1, inactive_file on v2) when stat has them, never below 0.
func workingSet(usage int64, stat map[string]int64, unified bool) int64 {
	key := "total_inactive_file"
	if unified {
		key = "inactive_file"
	}
	if inactive, ok := stat[key]; ok {
		return max(usage-inactive, 0)
	}
	return usage
}

// parseBytes reads a cgroup file holding one number of bytes.
func parseBytes(name, text string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// nodeMemoryObservation is memory.available of a node of memTotal bytes
// (/proc/meminfo's MemTotal) whose root cgroup's files are f: MemTotal
// less the root cgroup's working set, of capacity MemTotal.
func nodeMemoryObservation(memTotal int64, f cgroupMemoryFiles, unified bool) (Observation, error) {
	stat, err := parseMemoryStat(f.Stat)
	if err != nil {
		return Observation{}, fmt.Errorf("root cgroup: %w", err)
	}
	var usage int64
	if unified {
		anon, okAnon := stat["anon"]
		file, okFile := stat["file"]
		if !okAnon || !okFile {
			return Observation{}, errors.New("root cgroup: memory.stat has no anon and file")
		}
		usage = anon + file
	} else if usage, err = parseBytes("root cgroup: memory.usage_in_bytes", f.Usage); err != nil {
		return Observation{}, err
	}
	return Observation{Available: memTotal - workingSet(usage, stat, unified), Capacity: memTotal}, nil
}

// podsMemoryObservation is allocatableMemory.available of the pods
// cgroup (kubepods) whose files are f: its memory limit less its working
// set, of capacity the limit; ok is false when it has no limit.
func podsMemoryObservation(f cgroupMemoryFiles, unified bool) (o Observation, ok bool, err error) {
	limitText := strings.TrimSpace(f.Limit)
	if unified && limitText == "max" {
		return Observation{}, false, nil
	}
	limit, err := parseBytes("pods cgroup: memory limit", limitText)
	if err != nil {
		return Observation{}, false, err
	}
	if limit > memoryUnlimited {
		return Observation{}, false, nil
	}
	usage, err := parseBytes("pods cgroup: memory usage", f.Usage)
	if err != nil {
		return Observation{}, false, err
	}
	stat, err := parseMemoryStat(f.Stat)
	if err != nil {
		return Observation{}, false, fmt.Errorf("pods cgroup: %w", err)
	}
	return Observation{Available: limit - workingSet(usage, stat, unified), Capacity: limit}, true, nil
}

// CgroupUnified reports whether the cgroup filesystem at dir is cgroup
// v2's unified hierarchy: its root holds cgroup.controllers, which a
// cgroup v1 or hybrid mount (a tmpfs of per-controller v1 hierarchies,
// with v2's under unified/) lacks. Upstream's kubelet asks the same of
// /sys/fs/cgroup (libcontainer's IsCgroup2UnifiedMode, by the mount's
// filesystem type). No such file, or no dir, is cgroup v1; any other
// failure to look is an error. The kubelet's cgroup manager asks it too
// (kubelet.CgroupUnified).
func CgroupUnified(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, "cgroup.controllers"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("detecting the cgroup mode of %s: %w", dir, err)
	}
}

// readCgroupMemory reads the memory files of cgroup name (a cgroupfs
// path, "" the root) of the cgroup filesystem at dir: on cgroup v1 in the
// memory hierarchy, usage and stat, and the limit unless root; on v2
// memory.stat, and unless root memory.current and memory.max.
func readCgroupMemory(dir, name string, unified bool) (cgroupMemoryFiles, error) {
	root := name == ""
	cg := filepath.Join(dir, "memory", name)
	usage, limit := "memory.usage_in_bytes", "memory.limit_in_bytes"
	if unified {
		cg = filepath.Join(dir, name)
		usage, limit = "memory.current", "memory.max"
	}
	read := func(file string) (string, error) {
		b, err := os.ReadFile(filepath.Join(cg, file))
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", file, err)
		}
		return string(b), nil
	}
	var f cgroupMemoryFiles
	var err error
	if f.Stat, err = read("memory.stat"); err != nil {
		return f, err
	}
	if root && unified {
		return f, nil
	}
	if f.Usage, err = read(usage); err != nil {
		return f, err
	}
	if !root {
		if f.Limit, err = read(limit); err != nil {
			return f, err
		}
	}
	return f, nil
}
