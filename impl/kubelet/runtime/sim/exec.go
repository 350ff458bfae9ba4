package sim

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"strconv"
	"strings"
)

// runShell runs a simulated command against a container's file map. It
// understands: true, false, exit N, echo ARGS [> FILE], cat FILE,
// touch FILE, rm [-f] FILE, test -e FILE, env, printenv [NAME], and
// `sh -c "..."` / `/bin/sh -c`
// with commands joined by && or ;. Anything else exits 127 like a shell.
func runShell(files map[string]string, env []*runtimeapi.KeyValue, argv []string) (string, string, int32) {
	if len(argv) >= 3 && (argv[0] == "sh" || argv[0] == "/bin/sh" || argv[0] == "bash" || argv[0] == "/bin/bash") && argv[1] == "-c" {
		return runScript(files, env, argv[2])
	}
	return runCommand(files, env, argv)
}

func runScript(files map[string]string, env []*runtimeapi.KeyValue, script string) (string, string, int32) {
	var out, errOut strings.Builder
	var code int32
	for _, seq := range strings.Split(script, ";") {
		for i, part := range strings.Split(seq, "&&") {
			if i > 0 && code != 0 {
				break
			}
			o, e, c := runCommand(files, env, strings.Fields(part))
			out.WriteString(o)
			errOut.WriteString(e)
			code = c
		}
	}
	return out.String(), errOut.String(), code
}

func runCommand(files map[string]string, env []*runtimeapi.KeyValue, argv []string) (string, string, int32) {
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
				files[args[i+1]] = strings.Join(args[:i], " ") + "\n"
				return "", "", 0
			}
		}
		return strings.Join(args, " ") + "\n", "", 0
	case "cat":
		var out strings.Builder
		for _, f := range args {
			content, ok := files[f]
			if !ok {
				return out.String(), fmt.Sprintf("cat: %s: No such file or directory\n", f), 1
			}
			out.WriteString(content)
		}
		return out.String(), "", 0
	case "touch":
		for _, f := range args {
			if _, ok := files[f]; !ok {
				files[f] = ""
			}
		}
		return "", "", 0
	case "rm":
		for _, f := range args {
			if f == "-f" || f == "-rf" {
				continue
			}
			delete(files, f)
		}
		return "", "", 0
	case "test", "[":
		if len(args) >= 2 && (args[0] == "-e" || args[0] == "-f") {
			if _, ok := files[args[1]]; ok {
				return "", "", 0
			}
			return "", "", 1
		}
		return "", "", 2
	}
	return "", fmt.Sprintf("sh: %s: not found\n", argv[0]), 127
}
