package faults

import (
	"context"
	"reflect"
	"testing"
)

func TestCrashPointFiresOnceAfterSkip(t *testing.T) {
	ctx := WithComponent(context.Background(), "node-2")
	if CrashPoint(ctx, CrashSchedulerAfterAssume) {
		t.Fatal("unarmed crash point fired")
	}
	var fired []string
	disarm := ArmCrash(CrashSchedulerAfterAssume, 2, func(p, comp string) { fired = append(fired, p+"@"+comp) })
	defer disarm()
	got := []bool{}
	for i := 0; i < 5; i++ {
		got = append(got, CrashPoint(ctx, CrashSchedulerAfterAssume))
	}
	if want := []bool{false, false, true, false, false}; !reflect.DeepEqual(got, want) {
		t.Fatalf("crash point results %v, want %v", got, want)
	}
	if !reflect.DeepEqual(fired, []string{CrashSchedulerAfterAssume + "@node-2"}) {
		t.Fatalf("crash function ran for %v", fired)
	}
	if CrashHits()[CrashSchedulerAfterAssume] < 1 || len(Armed()) != 0 {
		t.Fatalf("hits %v, armed %v", CrashHits(), Armed())
	}
}

func TestDisarmedCrashPointDoesNotFire(t *testing.T) {
	disarm := ArmCrash(CrashKubeletAfterSandbox, 0, func(string, string) { t.Error("disarmed point fired") })
	if CrashPoint(context.Background(), CrashGCAfterOrphaning) {
		t.Fatal("another point fired")
	}
	disarm()
	if CrashPoint(context.Background(), CrashKubeletAfterSandbox) {
		t.Fatal("disarmed point fired")
	}
}

func TestDropFirst(t *testing.T) {
	odd := func(i int) bool { return i%2 == 1 }
	in := []int{2, 3, 4, 5}
	if got := DropFirst(in, odd); !reflect.DeepEqual(got, []int{2, 4, 5}) {
		t.Fatalf("DropFirst = %v", got)
	}
	if !reflect.DeepEqual(in, []int{2, 3, 4, 5}) {
		t.Fatalf("input changed: %v", in)
	}
	if got := DropFirst([]int{2, 4}, odd); !reflect.DeepEqual(got, []int{2, 4}) {
		t.Fatalf("DropFirst without match = %v", got)
	}
}
