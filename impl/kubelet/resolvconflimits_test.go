package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// searchPaths are n distinct search paths of l characters.
func searchPaths(n, l int) []string {
	var out []string
	for i := range n {
		out = append(out, strings.Repeat(string(rune('a'+i%26)), l-2)+string(rune('a'+i/26))+"x")
	}
	return out
}

// TestResolvConfLimitsWarning: the node's resolver file checked against
// the pod resolver's limits, as upstream's CheckLimitsForResolvConf: at
// most 32 search paths (29 with a cluster domain, whose 3 paths come
// first), none longer than 253 characters, a line of at most 2048; the
// first limit exceeded is the warning, in upstream's words.
func TestResolvConfLimitsWarning(t *testing.T) {
	const path = "/etc/resolv.conf"
	paths := searchPaths
	for _, tc := range []struct {
		name          string
		searches      []string
		clusterDomain string
		want          string
	}{
		{name: "none", want: ""},
		{name: "29 with a cluster domain", searches: paths(29, 10), clusterDomain: "cluster.local", want: ""},
		{name: "30 with a cluster domain", searches: paths(30, 10), clusterDomain: "cluster.local",
			want: "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!"},
		{name: "32 without a cluster domain", searches: paths(32, 10), want: ""},
		{name: "33 without a cluster domain", searches: paths(33, 10),
			want: "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 32 domains!"},
		{name: "a path of 253 characters", searches: paths(1, 253), want: ""},
		{name: "a path of 254 characters", searches: []string{"a.example", paths(1, 254)[0]},
			want: `Resolv.conf file "/etc/resolv.conf" contains a search path which length is more than allowed 253 chars!`},
		{name: "a line of 2048 characters", searches: append(paths(8, 250), strings.Repeat("z", 40)), want: ""},
		{name: "a line of 2049 characters", searches: append(paths(8, 250), strings.Repeat("z", 41)),
			want: "Resolv.conf file '/etc/resolv.conf' contains search line which length is more than allowed 2048 chars!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolvConfLimitsWarning(path, tc.searches, tc.clusterDomain); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckLimitsForResolvConf: a CRI kubelet checks its --resolv-conf
// once at start and records upstream's CheckLimitsForResolvConf warning on
// the Node: the limit exceeded, or the file's open or parse error; nothing
// for a file within the limits, for --resolv-conf "", or on a simulated
// node (whose pods' DNS reads no file).
func TestCheckLimitsForResolvConf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The last search line wins: 30 paths.
	tooMany := write("many", "search a.example\nsearch "+strings.Join(searchPaths(30, 10), " ")+"\n")
	fine := write("fine", "nameserver 10.0.0.1\nsearch a.example\n")
	bad := write("bad", "nameserver\nnameserver 10.0.0.1\nnameserver\n")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name   string
		real   bool
		resolv *string
		want   []string
	}{
		{"over the limits", true, &tooMany, []string{"Warning CheckLimitsForResolvConf Resolv.conf file '" + tooMany + "' contains search line consisting of more than 29 domains!"}},
		{"within the limits", true, &fine, nil},
		{"a parse error", true, &bad, []string{"Warning CheckLimitsForResolvConf nameserver list is empty "}},
		{"missing", true, &missing, []string{"Warning CheckLimitsForResolvConf open " + missing + ": no such file or directory"}},
		{"--resolv-conf \"\"", true, ptr.To(""), nil},
		// Upstream checks whatever the runtime, though a simulated node's
		// pods read no resolver file.
		{"a simulated node", false, &tooMany, []string{"Warning CheckLimitsForResolvConf Resolv.conf file '" + tooMany + "' contains search line consisting of more than 29 domains!"}},
		{"a simulated node, --resolv-conf \"\"", false, ptr.To(""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(100)
			h := newHarness(t, nil)
			if tc.real {
				h.krt = criTyped{h.rt}
			}
			h.k = h.newKubelet(func(c *Config) {
				c.Recorder, c.ResolverConfig, c.ClusterDomain, c.RootDir = rec, tc.resolv, "cluster.local", t.TempDir()
			})
			h.k.checkLimitsForResolvConf()
			if got := drain(rec); !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}

	// Run checks at start.
	rec := record.NewFakeRecorder(100)
	h := newHarness(t, nil)
	h.krt = criTyped{h.rt}
	k := h.newKubelet(func(c *Config) {
		c.Recorder, c.ResolverConfig, c.ClusterDomain, c.RootDir = rec, &tooMany, "cluster.local", t.TempDir()
	})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()
	want := "Warning CheckLimitsForResolvConf Resolv.conf file '" + tooMany + "' contains search line consisting of more than 29 domains!"
	var got []string
	eventually(t, "the CheckLimitsForResolvConf event", func() bool {
		got = append(got, drain(rec)...)
		return slices.Contains(got, want)
	})
	cancel()
	if err := <-runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
	if n := countEvents(append(got, drain(rec)...), "Warning CheckLimitsForResolvConf"); n != 1 {
		t.Errorf("%d CheckLimitsForResolvConf events, want 1 (once at start): %q", n, got)
	}
}
