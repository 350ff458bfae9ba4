package fuzz

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// FuzzLabelSelector: a label selector that parses prints as one that
// parses to the same requirements (as a multiset: terms on one key keep no
// particular order when printed), and matching it against any label set
// (through the storage layer's predicate too) does not panic.
func FuzzLabelSelector(f *testing.F) {
	for _, s := range []string{"", "a=b", "a!=b,c", "!a", "a in (x,y)", "a notin (x)", "a>1", "a<2", "x/y=z", "a==b", "a in ()", "a,,b"} {
		f.Add(s, "a=b,c=d")
	}
	f.Fuzz(func(t *testing.T, selector, set string) {
		sel, err := labels.Parse(selector)
		if err != nil {
			return
		}
		printed := sel.String()
		again, err := labels.Parse(printed)
		if err != nil {
			t.Fatalf("selector %q prints as %q, which does not parse: %v", selector, printed, err)
		}
		if a, b := labelTerms(sel), labelTerms(again); !slices.Equal(a, b) {
			t.Fatalf("selector %q prints as %q, which parses to other requirements: %q vs %q", selector, printed, a, b)
		}
		ls, err := labels.ConvertSelectorToLabelsMap(set)
		if err != nil {
			ls = labels.Set{"a": set}
		}
		m := sel.Matches(ls)
		if again.Matches(ls) != m {
			t.Fatalf("selector %q and its printed form %q disagree on %v", selector, printed, ls)
		}
		p := storage.SelectionPredicate{Label: sel, Field: fields.Everything()}
		if p.MatchesAttrs(ls, fields.Set{}) != m {
			t.Fatalf("the storage predicate disagrees with selector %q on %v", selector, ls)
		}
	})
}

// FuzzFieldSelector: the same for field selectors.
func FuzzFieldSelector(f *testing.F) {
	for _, s := range []string{"", "metadata.name=a", "metadata.name!=a,spec.nodeName=", "a==b", `a=b\,c`, "status.phase=Pending", "x"} {
		f.Add(s, "b")
	}
	f.Fuzz(func(t *testing.T, selector, value string) {
		sel, err := fields.ParseSelector(selector)
		if err != nil {
			return
		}
		printed := sel.String()
		again, err := fields.ParseSelector(printed)
		if err != nil {
			t.Fatalf("selector %q prints as %q, which does not parse: %v", selector, printed, err)
		}
		if a, b := fieldTerms(sel), fieldTerms(again); !slices.Equal(a, b) {
			t.Fatalf("selector %q prints as %q, which parses to other requirements: %q vs %q", selector, printed, a, b)
		}
		fs := fields.Set{"metadata.name": value, "metadata.namespace": "default", "spec.nodeName": value}
		m := sel.Matches(fs)
		if again.Matches(fs) != m {
			t.Fatalf("selector %q and its printed form %q disagree on %v", selector, printed, fs)
		}
		p := storage.SelectionPredicate{Label: labels.Everything(), Field: sel}
		if p.MatchesAttrs(labels.Set{}, fs) != m {
			t.Fatalf("the storage predicate disagrees with selector %q on %v", selector, fs)
		}
	})
}

// FuzzContinueToken: decoding any token never panics and never yields a
// key outside the listed prefix; encoding a clean UTF-8 key decodes back
// to it.
func FuzzContinueToken(f *testing.F) {
	tok, _ := etcd3.EncodeContinue("/registry/pods/default/a", "/registry/pods/", 5)
	f.Add(tok, "default/b", int64(7))
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi9zZWNyZXRzIn0", "../x", int64(-1))
	f.Add("", "", int64(0))
	f.Fuzz(func(t *testing.T, token, key string, rv int64) {
		const prefix = "/registry/pods/"
		from, gotRV, err := etcd3.DecodeContinue(token, prefix)
		if err == nil {
			rest := strings.TrimPrefix(from, prefix)
			if !strings.HasPrefix(from, prefix) || path.Clean("/"+rest) != "/"+rest || rest == "" || strings.HasPrefix(rest, "..") {
				t.Fatalf("token %q decodes to key %q, outside %q", token, from, prefix)
			}
			if gotRV == 0 {
				t.Fatalf("token %q decodes to resourceVersion 0", token)
			}
		}
		// Keys are built from validated names: clean paths in valid UTF-8
		// (the token is JSON, which cannot carry other bytes, upstream's
		// tokens alike).
		if rv == 0 || key == "" || path.Clean("/"+key) != "/"+key || !utf8.ValidString(key) {
			return
		}
		tok, err := etcd3.EncodeContinue(prefix+key, prefix, rv)
		if err != nil {
			t.Fatalf("encoding key %q: %v", key, err)
		}
		from, gotRV, err = etcd3.DecodeContinue(tok, prefix)
		if err != nil || from != prefix+key || gotRV != rv {
			t.Fatalf("key %q rv %d: token %q decodes to %q %d %v", key, rv, tok, from, gotRV, err)
		}
	})
}

// FuzzListQuery sends GET list requests with fuzzed label and field
// selectors, resourceVersion, resourceVersionMatch, limit and continue
// (random, a real token, or a real token's fields re-encoded with fuzzed
// values) to the process's API server. Properties: the answer is 2xx or a
// 4xx Status (5xx only as listed in allowed5xx), and nothing is written.
func FuzzListQuery(f *testing.F) {
	s := server(f)
	s.seedListObjects(f)
	f.Add(uint8(0), "app=fuzz", "metadata.name=list-1", "", uint8(0), "2", "", uint8(0))
	f.Add(uint8(5), "", "", "0", uint8(1), "1", "", uint8(1))
	f.Add(uint8(5), "", "spec.nodeName=", "1", uint8(2), "1", "default/list-3", uint8(2))
	f.Add(uint8(1), "!app", "", "", uint8(0), "-1", "x", uint8(3))
	rs, _ := served()
	f.Fuzz(func(t *testing.T, kind uint8, labelSel, fieldSel, rv string, rvMatch uint8, limit, cont string, contMode uint8) {
		r := rs[int(kind)%len(rs)]
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		q := url.Values{}
		set := func(k, v string) {
			if v != "" {
				q.Set(k, v)
			}
		}
		set("labelSelector", labelSel)
		set("fieldSelector", fieldSel)
		set("resourceVersion", rv)
		set("resourceVersionMatch", []string{"", "NotOlderThan", "Exact", "Bogus"}[rvMatch%4])
		set("limit", limit)
		switch contMode % 4 {
		case 0:
			set("continue", cont)
		case 1: // a real token from a first page
			code, body := s.do(ctx, http.MethodGet, s.collectionPath(r, "default")+"?limit=1", "", nil)
			if code == http.StatusOK {
				set("continue", continueOf(body))
			}
		case 2: // a token for a fuzzed start key at a fuzzed revision
			n, _ := strconv.ParseInt(rv, 10, 64)
			if tok, err := etcd3.EncodeContinue(keyPrefix+"/"+r.Name+"/"+cont, keyPrefix+"/"+r.Name+"/", n); err == nil {
				set("continue", tok)
			}
		}
		ns := "default"
		if contMode&4 != 0 {
			ns = ""
		}
		p := s.collectionPath(r, ns)
		if ns == "" {
			p = strings.Replace(p, "/namespaces//", "/", 1)
		}
		code, body := s.check(t, fuzzRequest{method: http.MethodGet, path: p, query: q})
		if code >= 300 && code < 400 || code < 200 {
			t.Fatalf("list answered %d: %s", code, body)
		}
	})
}

// seedListObjects creates a few labelled config maps and pods to list.
func (s *liveServer) seedListObjects(t testing.TB) {
	rs, _ := served()
	ctx := context.Background()
	for _, r := range rs {
		if r.Name != "configmaps" && r.Name != "pods" {
			continue
		}
		for i := range 5 {
			code, body := s.do(ctx, http.MethodPost, s.collectionPath(r, "default"), "application/json", templateJSON(r, "default", fmt.Sprintf("list-%d", i)))
			if code != http.StatusCreated && code != http.StatusConflict {
				t.Fatalf("creating %s list-%d: %d %s", r.Name, i, code, body)
			}
		}
	}
}

// continueOf extracts metadata.continue from a JSON list.
func continueOf(list []byte) string {
	const key = `"continue":"`
	i := strings.Index(string(list), key)
	if i < 0 {
		return ""
	}
	rest := string(list)[i+len(key):]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// labelTerms is sel's requirements, printed and sorted.
func labelTerms(sel labels.Selector) []string {
	reqs, _ := sel.Requirements()
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

// fieldTerms is sel's requirements, printed and sorted.
func fieldTerms(sel fields.Selector) []string {
	var out []string
	for _, r := range sel.Requirements() {
		out = append(out, fmt.Sprintf("%s %s %q", r.Field, r.Operator, r.Value))
	}
	slices.Sort(out)
	return out
}
