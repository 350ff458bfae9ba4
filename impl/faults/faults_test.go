package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestEnableAndDisable(t *testing.T) {
	if Enabled(KubeletReusesIP) {
		t.Fatalf("%s on before any Enable", KubeletReusesIP)
	}
	off := Enable(KubeletReusesIP, DeploymentIgnoresMaxSurge)
	if !Enabled(KubeletReusesIP) || !Enabled(DeploymentIgnoresMaxSurge) || Enabled(BindingOverwritesBinding) {
		t.Fatalf("after Enable: active %v", Active())
	}
	off()
	if Enabled(KubeletReusesIP) || len(Active()) != 0 {
		t.Fatalf("after disable: active %v", Active())
	}
}

func TestCatalogNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Catalog {
		if seen[m.Name] || m.Where == "" || len(m.CaughtBy) == 0 {
			t.Errorf("catalog entry %+v: duplicate or incomplete", m)
		}
		seen[m.Name] = true
		if got, ok := Lookup(m.Name); !ok || got.Name != m.Name {
			t.Errorf("Lookup(%q) = %+v, %v", m.Name, got, ok)
		}
	}
}

// watchServer streams the given events at once, then holds the stream
// open until the client goes away.
func watchServer(events []watchEvent) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "application/json,*/*" {
			http.Error(w, "only JSON here", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_ = json.NewEncoder(w).Encode(e)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
}

func modified(name string, rv int) watchEvent {
	return watchEvent{Type: "MODIFIED", Object: json.RawMessage(fmt.Sprintf(
		`{"metadata":{"namespace":"ns","name":%q,"resourceVersion":"%d"}}`, name, rv))}
}

// readEvents reads n events from a watch through the wrapped transport.
func readEvents(t *testing.T, component, url string, n int) []string {
	t.Helper()
	return readWatch(t, component, url+"/api/v1/pods?watch=true", n)
}

// readWatch reads n events from the watch at url through the wrapped
// transport.
func readWatch(t *testing.T, component, url string, n int) []string {
	t.Helper()
	client := &http.Client{Transport: WrapTransport(component)(http.DefaultTransport)}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, */*") // as typed clientsets ask
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	var out []string
	for len(out) < n {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		var m struct {
			Metadata struct{ Name, ResourceVersion string } `json:"metadata"`
		}
		if err := json.Unmarshal(ev.Object, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.Type+" "+m.Metadata.Name+"@"+m.Metadata.ResourceVersion)
	}
	return out
}

func TestWatchFaults(t *testing.T) {
	ArmTransports()
	before := runtime.NumGoroutine()
	events := []watchEvent{
		{Type: "ADDED", Object: json.RawMessage(`{"metadata":{"namespace":"ns","name":"a","resourceVersion":"1"}}`)},
		modified("a", 2), modified("b", 3), modified("a", 4), modified("a", 5),
	}
	srv := watchServer(events)
	defer srv.Close()

	t.Run("no fault: every event in order", func(t *testing.T) {
		got := fmt.Sprint(readEvents(t, "scheduler", srv.URL, 5))
		if want := "[ADDED a@1 MODIFIED a@2 MODIFIED b@3 MODIFIED a@4 MODIFIED a@5]"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
	t.Run("delayed and coalesced: intermediate states of a are never seen", func(t *testing.T) {
		clear := SetWatchFault("controller-manager", WatchFault{Delay: 500 * time.Millisecond, Coalesce: true})
		defer clear()
		_, dropped0 := WatchStats()
		got := fmt.Sprint(readEvents(t, "controller-manager", srv.URL, 3))
		if want := "[ADDED a@1 MODIFIED b@3 MODIFIED a@5]"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		if _, dropped := WatchStats(); dropped-dropped0 != 2 {
			t.Fatalf("coalesced %d events, want 2", dropped-dropped0)
		}
	})
	t.Run("deliveries are observed with their resourceVersion, after the delay", func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		var last time.Time
		stop := ObserveDeliveries(func(d Delivery) {
			mu.Lock()
			defer mu.Unlock()
			if d.Component == "node-1" {
				seen = append(seen, d.Type+" "+d.Namespace+"/"+d.Name+"@"+d.ResourceVersion)
				last = d.At
			}
		})
		defer stop()
		clear := SetWatchFault("node-1", WatchFault{Delay: 300 * time.Millisecond})
		defer clear()
		start := time.Now()
		readEvents(t, "node-1", srv.URL, 5)
		mu.Lock()
		defer mu.Unlock()
		if got, want := fmt.Sprint(seen), "[ADDED ns/a@1 MODIFIED ns/a@2 MODIFIED ns/b@3 MODIFIED ns/a@4 MODIFIED ns/a@5]"; got != want {
			t.Fatalf("observed %s, want %s", got, want)
		}
		if last.Sub(start) < 300*time.Millisecond {
			t.Fatalf("last delivery observed %s after the watch started, before the fault's delay", last.Sub(start))
		}
	})
	t.Run("a watch-list's initial events are marked as such", func(t *testing.T) {
		list := watchServer([]watchEvent{
			{Type: "ADDED", Object: json.RawMessage(`{"metadata":{"namespace":"ns","name":"a","resourceVersion":"1"}}`)},
			{Type: "BOOKMARK", Object: json.RawMessage(`{"metadata":{"resourceVersion":"3","annotations":{"k8s.io/initial-events-end":"true"}}}`)},
			modified("a", 4),
		})
		defer list.Close()
		var mu sync.Mutex
		var seen []string
		stop := ObserveDeliveries(func(d Delivery) {
			mu.Lock()
			defer mu.Unlock()
			if d.Component == "node-2" {
				seen = append(seen, fmt.Sprintf("%s@%s initial=%v", d.Type, d.ResourceVersion, d.Initial))
			}
		})
		defer stop()
		readWatch(t, "node-2", list.URL+"/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", 3)
		readEvents(t, "node-2", list.URL, 3) // a plain watch has no initial events
		// A delivery is observed just after the reader took it.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n >= 6 {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		want := "[ADDED@1 initial=true BOOKMARK@3 initial=true MODIFIED@4 initial=false ADDED@1 initial=false BOOKMARK@3 initial=false MODIFIED@4 initial=false]"
		if got := fmt.Sprint(seen); got != want {
			t.Fatalf("observed %s, want %s", got, want)
		}
	})
	t.Run("another component is unaffected", func(t *testing.T) {
		clear := SetWatchFault("controller-manager", WatchFault{Coalesce: true, Delay: time.Second})
		defer clear()
		if got := readEvents(t, "kubelet", srv.URL, 5); len(got) != 5 {
			t.Fatalf("got %v", got)
		}
	})
	srv.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		t.Fatalf("%d goroutines after closing every watch, %d before", n, before)
	}
}

// A component's writes are timed: MaxWriteLatency returns the slowest and
// resets; reads are not counted.
func TestWriteLatency(t *testing.T) {
	ArmTransports()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(200 * time.Millisecond)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	client := &http.Client{Transport: WrapTransport("scheduler")(http.DefaultTransport)}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, srv.URL+"/api/v1/namespaces/ns/pods/p/binding", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if d := MaxWriteLatency("scheduler"); d < 200*time.Millisecond {
		t.Fatalf("slowest write %s, want at least the server's 200ms", d)
	}
	if d := MaxWriteLatency("scheduler"); d != 0 {
		t.Fatalf("after a reset the slowest write is %s", d)
	}
}

func TestUnarmedTransportIsUnchanged(t *testing.T) {
	armed.Store(false)
	defer armed.Store(true)
	rt := http.DefaultTransport
	if got := WrapTransport("x")(rt); got != rt {
		t.Fatalf("unarmed WrapTransport wrapped the transport")
	}
}

func TestJSONOnlyKeepsParameters(t *testing.T) {
	for in, want := range map[string]string{
		"application/vnd.kubernetes.protobuf":                   "application/json",
		"application/vnd.kubernetes.protobuf, application/json": "application/json",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
		"": "application/json",
	} {
		if got := jsonOnly(in); got != want {
			t.Errorf("jsonOnly(%q) = %q, want %q", in, got, want)
		}
	}
}
