package request

import (
	"context"
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
