package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// signalChildEnv makes the test binary, run again by
// TestSecondSignalExits, a process that winds down slowly after the first
// signal, as a check whose cleanup waits on an unreachable server.
const signalChildEnv = "KUBEPROOF_SIGNAL_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(signalChildEnv) != "" {
		ctx, stop := signalContext()
		defer stop()
		fmt.Println("ready")
		<-ctx.Done()
		fmt.Println("winding down")
		time.Sleep(time.Minute)
		fmt.Println("done")
		return
	}
	os.Exit(m.Run())
}

// TestSecondSignalExits: the first SIGINT ends the command's context and
// leaves it time to wind down; a second one ends the process at once. Both
// signals were caught before, the second ignored, so an interrupted check
// waiting on an unreachable server could not be stopped with ^C.
func TestSecondSignalExits(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), signalChildEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("child said %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	expect("ready")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	expect("winding down")
	// The first signal's handler may still be restoring the default
	// action: signal until the process is gone.
	exited := make(chan error, 1)
	go func() {
		for lines.Scan() {
		}
		exited <- cmd.Wait()
	}()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("child ended with %v, want killed by SIGINT", err)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
				t.Fatalf("child ended with %v, want killed by SIGINT", err)
			}
			return
		case <-tick.C:
			_ = cmd.Process.Signal(syscall.SIGINT)
		case <-deadline:
			t.Fatal("the child still winds down 10 s after a second SIGINT")
		}
	}
}
