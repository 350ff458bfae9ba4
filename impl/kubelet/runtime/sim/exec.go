package sim

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"strconv"
	"strings"
)

// runShell runs a simulated command against a container's file map. It
// understands: true, false, exit N, echo ARGS [> FILE], cat FILE,
// touch FILE, rm [-f] FILE, test -e FILE, env, printenv [NAME], and
// `sh -c "..."` / `/bin/sh -c`. cat and test also see mounted files.
// with commands joined by && or ;. Anything else exits 127 like a shell.
// shell is a container's view for the simulated commands: its own files,
// its environment, and its mounts (read from the host).
type shell struct {
	files  *map[string]string // the container's own files, made at the first write
	env    []*runtimeapi.KeyValue
	mounts *mountList
	podUID string // the container's pod UID label (see mount)
}

// mount is what the simulated shell needs of a CRI mount: where it is
// seen and where its files are. A container keeps these paths instead of
// the kubelet's runtimeapi.Mount (a protobuf message some ten times their
// size). The host path of a kubelet volume,
// <root>/pods/<pod UID>/volumes/<plugin>/<name>, is kept as the part
// before the pod's UID (shared by every pod of the kubelet) and the part
// after it; the UID is the container's own label.
type mount struct {
	containerPath string
	// hostPrefix + the pod's UID + hostRest is the host path if
	// splitAtUID, else hostPrefix is.
	hostPrefix, hostRest string
	splitAtUID           bool
}

// hostPath is the mount's host path for a container of the pod podUID.
func (m *mount) hostPath(podUID string) string {
	if !m.splitAtUID {
		return m.hostPrefix
	}
	return m.hostPrefix + podUID + m.hostRest
}

// mountList is a container's mounts. Most containers have one (the
// service account token's volume), so the first is kept in the list
// itself, in the container's record, and only further ones in a slice:
// one heap object less per container than a slice of all.
type mountList struct {
	first mount
	more  []mount // the second and later
	n     int     // how many in all
}

// all yields the mounts in order.
func (ms *mountList) all() iter.Seq[*mount] {
	return func(yield func(*mount) bool) {
		if ms.n == 0 || !yield(&ms.first) {
			return
		}
		for i := range ms.more {
			if !yield(&ms.more[i]) {
				return
			}
		}
	}
}

// mountsOf keeps the paths of the kubelet's mounts of a container of the
// pod podUID.
func mountsOf(ms []*runtimeapi.Mount, podUID string) mountList {
	out := mountList{n: len(ms)}
	if len(ms) > 1 {
		out.more = make([]mount, len(ms)-1)
	}
	for i, m := range ms {
		k := mount{containerPath: m.ContainerPath, hostPrefix: m.HostPath}
		if podUID != "" {
			if j := strings.Index(m.HostPath, "/"+podUID+"/"); j >= 0 {
				k.hostPrefix = shared.str(m.HostPath[:j+1])
				k.hostRest = strings.Clone(m.HostPath[j+1+len(podUID):])
				k.splitAtUID = true
			}
		}
		if i == 0 {
			out.first = k
		} else {
			out.more[i-1] = k
		}
	}
	return out
}

// own returns the container's own files (nil if it has none).
func (sh *shell) own() map[string]string {
	if sh.files == nil {
		return nil
	}
	return *sh.files
}

// writeFile sets one of the container's own files; most containers never
// write one, so their map is made here, at the first write.
func (sh *shell) writeFile(path, content string) {
	if sh.files == nil {
		sh.files = new(map[string]string)
	}
	if *sh.files == nil {
		*sh.files = map[string]string{}
	}
	(*sh.files)[path] = content
}

// read returns a file's content: the container's own files first, then
// files under a mount, read from the mount's host path.
func (sh *shell) read(path string) (string, bool) {
	if c, ok := sh.own()[path]; ok {
		return c, true
	}
	for m := range sh.mounts.all() {
		mp := strings.TrimSuffix(m.containerPath, "/")
		if path == mp || strings.HasPrefix(path, mp+"/") {
			b, err := os.ReadFile(filepath.Join(m.hostPath(sh.podUID), strings.TrimPrefix(path, mp)))
			if err == nil {
				return string(b), true
			}
		}
	}
	return "", false
}

// exists reports whether a path exists: an own file or anything (files or
// directories) under a mount.
func (sh *shell) exists(path string) bool {
	if _, ok := sh.own()[path]; ok {
		return true
	}
	for m := range sh.mounts.all() {
		mp := strings.TrimSuffix(m.containerPath, "/")
		if path == mp || strings.HasPrefix(path, mp+"/") {
			if _, err := os.Stat(filepath.Join(m.hostPath(sh.podUID), strings.TrimPrefix(path, mp))); err == nil {
				return true
			}
		}
	}
	return false
}

func runShell(sh *shell, argv []string) (string, string, int32) {
	if len(argv) >= 3 && (argv[0] == "sh" || argv[0] == "/bin/sh" || argv[0] == "bash" || argv[0] == "/bin/bash") && argv[1] == "-c" {
		return runScript(sh, argv[2])
	}
	return runCommand(sh, argv)
}

func runScript(sh *shell, script string) (string, string, int32) {
	var out, errOut strings.Builder
	var code int32
	for _, seq := range strings.Split(script, ";") {
		for i, part := range strings.Split(seq, "&&") {
			if i > 0 && code != 0 {
				break
			}
			o, e, c := runCommand(sh, strings.Fields(part))
			out.WriteString(o)
			errOut.WriteString(e)
			code = c
		}
	}
	return out.String(), errOut.String(), code
}

func runCommand(sh *shell, argv []string) (string, string, int32) {
	env := sh.env
	if len(argv) == 0 {
		return "", "", 0
	}
	name := argv[0]
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	args := argv[1:]
	switch name {
	case "true":
		return "", "", 0
	case "env", "printenv":
		var out strings.Builder
		for _, kv := range env {
			switch {
			case len(args) == 0:
				out.WriteString(kv.Key + "=" + string(kv.Value) + "\n")
			case kv.Key == args[0]:
				return string(kv.Value) + "\n", "", 0
			}
		}
		if len(args) > 0 {
			return "", "", 1
		}
		return out.String(), "", 0
	case "false":
		return "", "", 1
	case "exit":
		if len(args) == 0 {
			return "", "", 0
		}
		c, err := strconv.Atoi(args[0])
		if err != nil {
			return "", "exit: illegal number: " + args[0] + "\n", 2
		}
		return "", "", int32(c)
	case "echo":
		for i, a := range args {
			if a == ">" && i+1 < len(args) {
				sh.writeFile(args[i+1], strings.Join(args[:i], " ")+"\n")
				return "", "", 0
			}
		}
		return strings.Join(args, " ") + "\n", "", 0
	case "cat":
		var out strings.Builder
		for _, f := range args {
			content, ok := sh.read(f)
			if !ok {
				return out.String(), fmt.Sprintf("cat: %s: No such file or directory\n", f), 1
			}
			out.WriteString(content)
		}
		return out.String(), "", 0
	case "touch":
		for _, f := range args {
			if _, ok := sh.own()[f]; !ok {
				sh.writeFile(f, "")
			}
		}
		return "", "", 0
	case "rm":
		for _, f := range args {
			if f == "-f" || f == "-rf" {
				continue
			}
			delete(sh.own(), f)
		}
		return "", "", 0
	case "test", "[":
		if len(args) >= 2 && (args[0] == "-e" || args[0] == "-f") {
			if sh.exists(args[1]) {
				return "", "", 0
			}
			return "", "", 1
		}
		return "", "", 2
	}
	return "", fmt.Sprintf("sh: %s: not found\n", argv[0]), 127
}
