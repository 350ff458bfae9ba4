package request

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// The request chain records the authenticated user in the node WithInfo
// added; what every reader sees must be what separate WithValue nodes at
// those places would give.
func TestSetUserRecordsTheUserWhereWithInfoWouldHave(t *testing.T) {
	info := &Info{Verb: "create"}
	alice, bob := &User{Name: "alice"}, &User{Name: "bob"}

	t.Run("in the WithInfo node, seen through contexts derived before", func(t *testing.T) {
		base := WithInfo(context.Background(), info)
		timed, cancel := context.WithTimeout(base, time.Minute)
		defer cancel()
		if got := SetUser(timed, alice); got != timed {
			t.Fatal("SetUser made a new context although the WithInfo node could hold the user")
		}
		if UserFrom(timed) != alice || UserFrom(base) != alice || InfoFrom(timed) != info {
			t.Fatalf("user %v, info %v; want alice and the info", UserFrom(timed), InfoFrom(timed))
		}
		// Impersonation's WithUser on top wins, as the nearer value.
		if UserFrom(WithUser(timed, bob)) != bob {
			t.Fatal("a nearer WithUser does not win")
		}
		// A second SetUser does not overwrite the recorded user.
		again := SetUser(timed, bob)
		if again == timed || UserFrom(again) != bob || UserFrom(timed) != alice {
			t.Fatal("a second SetUser changed the first one's context")
		}
	})
	t.Run("a nearer user already set: a new node, the old context unchanged", func(t *testing.T) {
		outer := WithUser(WithInfo(context.Background(), info), bob)
		got := SetUser(outer, alice)
		if got == outer || UserFrom(got) != alice || UserFrom(outer) != bob {
			t.Fatalf("got %v, outer %v", UserFrom(got), UserFrom(outer))
		}
	})
	t.Run("a user set outside the WithInfo node is not shadowed", func(t *testing.T) {
		ctx := WithInfo(WithUser(context.Background(), bob), info)
		got := SetUser(ctx, alice)
		if got == ctx || UserFrom(got) != alice || UserFrom(ctx) != bob {
			t.Fatalf("got %v, ctx %v", UserFrom(got), UserFrom(ctx))
		}
	})
	t.Run("no WithInfo: WithUser", func(t *testing.T) {
		ctx := context.Background()
		got := SetUser(ctx, alice)
		if got == ctx || UserFrom(got) != alice || InfoFrom(got) != nil {
			t.Fatal("SetUser without WithInfo")
		}
	})
	t.Run("cancellation and other values pass through", func(t *testing.T) {
		type key struct{}
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
		ctx := WithInfo(parent, info)
		if ctx.Value(key{}) != "v" {
			t.Fatal("a parent's value is lost")
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the parent's cancellation did not reach the WithInfo node")
		}
	})
}

// The request chain's timeout is set in the node WithInfo added: the
// context is the same node, with the deadline, cancellation, values and
// later SetUser context.WithTimeout's node would have given.
func TestWithTimeoutSetsTheDeadlineWhereWithInfoWouldHave(t *testing.T) {
	info := &Info{Verb: "create"}
	type key struct{}
	t.Run("in the WithInfo node", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
		defer cancelParent()
		base := WithInfo(parent, info)
		start := time.Now()
		ctx, cancel := WithTimeout(base, time.Hour)
		if ctx != base {
			t.Fatal("WithTimeout made a new context although the WithInfo node could hold the deadline")
		}
		dl, ok := ctx.Deadline()
		if !ok || dl.Before(start.Add(time.Hour)) || dl.After(time.Now().Add(time.Hour)) {
			t.Fatalf("deadline %v, %v; want an hour from the call", dl, ok)
		}
		if InfoFrom(ctx) != info || ctx.Value(key{}) != "v" || ctx.Err() != nil {
			t.Fatal("the info, a parent's value or the error changed")
		}
		alice := &User{Name: "alice"}
		if got := SetUser(ctx, alice); got != ctx || UserFrom(ctx) != alice {
			t.Fatal("SetUser after WithTimeout did not record the user in the node")
		}
		// A context derived afterwards ends with it.
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		cancel()
		<-child.Done()
		if ctx.Err() != context.Canceled || child.Err() != context.Canceled {
			t.Fatalf("after cancel: %v, child %v", ctx.Err(), child.Err())
		}
	})
	t.Run("the deadline ends it", func(t *testing.T) {
		ctx, cancel := WithTimeout(WithInfo(context.Background(), info), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		if ctx.Err() != context.DeadlineExceeded {
			t.Fatalf("err %v, want DeadlineExceeded", ctx.Err())
		}
	})
	t.Run("the parent's cancellation ends it", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := WithTimeout(WithInfo(parent, info), time.Hour)
		defer cancel()
		cancelParent()
		<-ctx.Done()
		if ctx.Err() != context.Canceled {
			t.Fatalf("err %v, want Canceled", ctx.Err())
		}
	})
	t.Run("not the WithInfo node itself: a new context, ctx unchanged", func(t *testing.T) {
		base := WithInfo(context.Background(), info)
		outer := context.WithValue(base, key{}, "v")
		ctx, cancel := WithTimeout(outer, time.Hour)
		defer cancel()
		if ctx == outer || InfoFrom(ctx) != info || ctx.Value(key{}) != "v" {
			t.Fatal("want a new context carrying the info and values")
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Fatal("no deadline")
		}
		if _, ok := base.Deadline(); ok {
			t.Fatal("the WithInfo node under another context got the deadline")
		}
	})
}

// The endpoint's warnings collector is kept in the node WithInfo added:
// what every reader of the context sees must be what a WithValue node on
// top would give.
func TestSetValueKeepsTheValueWhereWithValueWouldHave(t *testing.T) {
	type key struct{}
	type other struct{}
	r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", nil)

	t.Run("in the node: the same context, the value seen, the rest unchanged", func(t *testing.T) {
		parent := context.WithValue(context.Background(), key{}, "parent's")
		ctx := SetUser(NewContext(parent, r), &User{Name: "alice"})
		got := SetValue(ctx, key{}, "mine")
		if got != ctx {
			t.Fatal("SetValue made a new context although the node could hold the value")
		}
		if got.Value(key{}) != "mine" || UserFrom(got).Name != "alice" || InfoFrom(got).Namespace != "ns" || got.Value(other{}) != nil {
			t.Fatalf("value %v, user %v, info %v, other %v", got.Value(key{}), UserFrom(got), InfoFrom(got), got.Value(other{}))
		}
		// A second value needs a node of its own; both are seen.
		second := SetValue(got, other{}, 2)
		if second == got || second.Value(other{}) != 2 || second.Value(key{}) != "mine" || got.Value(other{}) != nil {
			t.Fatal("a second SetValue")
		}
	})
	t.Run("not the node itself: WithValue", func(t *testing.T) {
		node := NewContext(context.Background(), r)
		derived, cancel := context.WithCancel(node)
		defer cancel()
		got := SetValue(derived, key{}, "mine")
		if got == derived || got.Value(key{}) != "mine" || node.Value(key{}) != nil || derived.Value(key{}) != nil {
			t.Fatal("SetValue on a context derived from the node")
		}
		plain := context.Background()
		if got := SetValue(plain, key{}, 1); got == plain || got.Value(key{}) != 1 {
			t.Fatal("SetValue without a node")
		}
	})
}

// Keeping the value in the node takes no allocation: a request's context
// node and its warnings collector are one allocation, as the node alone.
func TestSetValueInTheNodeAllocatesNothing(t *testing.T) {
	type key struct{}
	r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", nil)
	parent := context.Background()
	node := testing.AllocsPerRun(100, func() { _ = NewContext(parent, r) })
	withValue := testing.AllocsPerRun(100, func() { _ = SetValue(NewContext(parent, r), key{}, r) })
	if withValue != node {
		t.Fatalf("a node with a value: %v allocations, the node alone %v", withValue, node)
	}
}
