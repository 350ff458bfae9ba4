// Package kubectl runs a real kubectl against a real `kubeproof up` process:
// issue 2's acceptance test that kubectl works against kubeproof's API
// server. TestMain builds the kubeproof binary once, finds kubectl on the PATH
// (or builds one from the k8s.io/kubectl module, so the tests never skip for
// want of one), starts `kubeproof up --port 0` on a temporary data dir with
// the API server and etcd only (--no-controller-manager --no-scheduler
// --nodes 0) and stops it with SIGTERM at the end, failing unless it exits 0.
package kubectl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	// kubectlPath and kubeproofPath are the binaries under test.
	kubectlPath, kubeproofPath string
	// server is the shared `kubeproof up` every test but the restart test uses.
	server *upProcess
	// scratch is a directory for editor scripts and the discovery cache.
	scratch string
)

func TestMain(m *testing.M) {
	code, err := runMain(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/kubectl:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func runMain(m *testing.M) (int, error) {
	// The tests mostly wait on kubectl processes: run more of them at once
	// than the default (GOMAXPROCS) unless -parallel was given.
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		if err := flag.Set("test.parallel", "6"); err != nil {
			return 1, err
		}
	}
	dir, err := os.MkdirTemp("", "kubeproof-e2e-kubectl-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	scratch = dir

	kubeproofPath = filepath.Join(dir, "kubeproof")
	if err := goBuild(kubeproofPath, "github.com/kubeproof/kubeproof/cmd/kubeproof"); err != nil {
		return 1, err
	}
	// KUBEPROOF_E2E_BUILD_KUBECTL=1 uses the built kubectl even when one is
	// on the PATH (how CI machines without kubectl run).
	if p, err := exec.LookPath("kubectl"); err == nil && os.Getenv("KUBEPROOF_E2E_BUILD_KUBECTL") == "" {
		kubectlPath = p
	} else {
		kubectlPath = filepath.Join(dir, "kubectl")
		flags, err := kubectlVersionFlags()
		if err != nil {
			return 1, err
		}
		if err := goBuild(kubectlPath, "github.com/kubeproof/kubeproof/e2e/internal/kubectlbin", flags...); err != nil {
			return 1, err
		}
	}
	if err := writeEditor(filepath.Join(dir, "editor.sh")); err != nil {
		return 1, err
	}

	server, err = startUp(filepath.Join(dir, "data"))
	if err != nil {
		return 1, err
	}
	code := m.Run()
	if err := server.stop(); err != nil {
		return code, fmt.Errorf("stopping kubeproof up: %w", err)
	}
	return code, nil
}

// kubectlVersionFlags stamp the built kubectl with the version of the
// k8s.io/kubectl module (module v0.N.P is kubectl v1.N.P), as release builds
// are; unstamped, `kubectl version` fails to parse its own version.
func kubectlVersionFlags() ([]string, error) {
	out, err := exec.Command(goTool(), "list", "-m", "-f", "{{.Version}}", "k8s.io/kubectl").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m k8s.io/kubectl: %w", err)
	}
	v := strings.TrimSpace(string(out)) // v0.37.2
	parts := strings.SplitN(strings.TrimPrefix(v, "v0."), ".", 2)
	if !strings.HasPrefix(v, "v0.") || len(parts) != 2 {
		return nil, fmt.Errorf("unexpected k8s.io/kubectl version %q", v)
	}
	var x []string
	for _, pkg := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		x = append(x, "-X", pkg+".gitVersion=v1."+parts[0]+"."+parts[1], "-X", pkg+".gitMajor=1", "-X", pkg+".gitMinor="+parts[0])
	}
	return []string{"-ldflags=" + strings.Join(x, " ")}, nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// goBuild builds a main package of this module into out.
func goBuild(out, pkg string, flags ...string) error {
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	cmd := exec.Command(goTool(), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, stderr.String())
	}
	return nil
}

// writeEditor writes the EDITOR kubectl edit runs: sed with the expression
// in $EDIT_SED, in place, on the file kubectl hands it.
func writeEditor(path string) error {
	script := "#!/bin/sh\nexec sed -i -E -e \"$EDIT_SED\" \"$1\"\n"
	return os.WriteFile(path, []byte(script), 0o755)
}

// upProcess is a running `kubeproof up`.
type upProcess struct {
	cmd        *exec.Cmd
	dataDir    string
	url        string
	kubeconfig string

	mu     sync.Mutex
	output bytes.Buffer // stdout and stderr, for failure messages
	done   chan struct{}
	err    error // the process's exit error, once done is closed
}

// startUp starts `kubeproof up --port 0 --data-dir dataDir` and waits until it
// has printed its API server URL and kubeconfig path.
func startUp(dataDir string) (*upProcess, error) {
	p := &upProcess{dataDir: dataDir, done: make(chan struct{})}
	// Only the API server (and etcd): these are the API server's acceptance
	// tests, and with no controllers, scheduler or kubelets what an object
	// looks like after each command is what the API server alone made of it.
	p.cmd = exec.Command(kubeproofPath, "up", "--port", "0", "--data-dir", dataDir,
		"--no-controller-manager", "--no-scheduler", "--nodes", "0")
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.output}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kubeproof up: %w", err)
	}
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.output.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	timeout := time.After(2 * time.Minute)
	for p.url == "" || p.kubeconfig == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				<-p.done
				return nil, fmt.Errorf("kubeproof up exited before printing its kubeconfig (%v):\n%s", p.err, p.log())
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "API server:"); ok {
				p.url = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "kubeconfig:"); ok {
				p.kubeconfig = strings.TrimSpace(v)
			}
		case <-timeout:
			_ = p.cmd.Process.Kill()
			<-p.done
			return nil, fmt.Errorf("kubeproof up printed no kubeconfig within 2m:\n%s", p.log())
		}
	}
	if !strings.HasPrefix(p.url, "https://127.0.0.1:") {
		_ = p.stop()
		return nil, fmt.Errorf("kubeproof up printed API server %q, want https://127.0.0.1:<port>", p.url)
	}
	return p, nil
}

// stop sends SIGTERM and waits for a clean exit (status 0).
func (p *upProcess) stop() error {
	select {
	case <-p.done:
		return fmt.Errorf("kubeproof up had already exited (%v):\n%s", p.err, p.log())
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("kubeproof up did not exit within 1m of SIGTERM:\n%s", p.log())
	}
	if p.err != nil {
		return fmt.Errorf("kubeproof up exited with %v after SIGTERM:\n%s", p.err, p.log())
	}
	return nil
}

func (p *upProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// kubectl runs kubectl against p with stdin and extra environment.
func (p *upProcess) kubectl(ctx context.Context, stdin string, env []string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, kubectlPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig, "KUBECACHEDIR="+filepath.Join(scratch, "cache"))
	cmd.Env = append(cmd.Env, env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// run runs kubectl against the shared server and returns its stdout; a
// failure fails the test with kubectl's stderr.
func run(t *testing.T, args ...string) string {
	t.Helper()
	return runWith(t, server, "", nil, args...)
}

// runIn is run with stdin (for `-f -`).
func runIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return runWith(t, server, stdin, nil, args...)
}

func runWith(t *testing.T, p *upProcess, stdin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, errOut, err := p.kubectl(ctx, stdin, env, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// runFail runs kubectl expecting it to fail with wantErr in its stderr; it
// returns stderr.
func runFail(t *testing.T, wantErr string, args ...string) string {
	t.Helper()
	return runFailIn(t, "", wantErr, args...)
}

func runFailIn(t *testing.T, stdin, wantErr string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, errOut, err := server.kubectl(ctx, stdin, nil, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("kubectl %s: want a failure with %q, got err=%v\nstdout: %s\nstderr: %s", strings.Join(args, " "), wantErr, err, out, errOut)
	}
	if !strings.Contains(errOut, wantErr) {
		t.Fatalf("kubectl %s: stderr does not contain %q:\n%s", strings.Join(args, " "), wantErr, errOut)
	}
	return errOut
}

// jsonpath reads one field of an object with -o jsonpath.
func jsonpath(t *testing.T, expr string, args ...string) string {
	t.Helper()
	return run(t, append(args, "-o", "jsonpath="+expr)...)
}

// createNamespace creates a namespace for one test.
func createNamespace(t *testing.T, name string) string {
	t.Helper()
	run(t, "create", "namespace", name)
	return name
}
