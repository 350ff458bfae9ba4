package apiserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// listBlocker holds the lists of the user "lister" in authorization,
// which runs while the request holds its flow control seats, until a
// token is sent on release.
type listBlocker struct {
	entered chan string // the resource of each list held
	release chan struct{}
}

func (b *listBlocker) Authorize(ctx context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.User != nil && a.User.Name == "lister" && a.Info != nil && a.Info.Verb == "list" {
		b.entered <- a.Info.Resource
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	return auth.DecisionAllow, "", nil
}

// workEnv is a server with two priority levels that reject instead of
// queuing and neither lend nor borrow: "bulk" (5 seats), for the user
// lister, and "one" (1 seat), for the user watcher. Object counts are
// polled every 100 ms. tune, if any, changes the configuration further.
func workEnv(t *testing.T, b *listBlocker, tune ...func(*apiserver.Config)) *env {
	t.Helper()
	e := newEnv(t, func(c *apiserver.Config) {
		// With the watch cache, as kube-apiserver runs: a watch from etcd
		// is initialized as soon as it starts.
		factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(),
			Prefix: fmt.Sprintf("/work%d-%d", time.Now().UnixNano(), prefixSeq.Add(1)), WatchCache: true})
		t.Cleanup(factory.Close)
		c.StorageFactory = factory
		c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight = 100, 100
		c.EtcdCountMetricPollPeriod = 100 * time.Millisecond
		c.Authorizer = b
		for _, f := range tune {
			f(c)
		}
	})
	t.Cleanup(func() { close(b.release) }) // a failed test's held lists end
	fc := e.cs.FlowcontrolV1()
	for _, l := range []struct {
		name, user string
		shares     int32
	}{{"bulk", "lister", 6}, {"one", "watcher", 1}} {
		_, err := fc.PriorityLevelConfigurations().Create(ctx(t), &flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: l.name},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr32(l.shares),
					LendablePercent: ptr32(0), BorrowingLimitPercent: ptr32(0),
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = fc.FlowSchemas().Create(ctx(t), &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: l.name},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: l.name},
				MatchingPrecedence:         500,
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: l.user}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
						Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
				}},
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the levels' seats", func() bool {
		m := string(e.do("GET", "/metrics", nil).body)
		return strings.Contains(m, `apiserver_flowcontrol_nominal_limit_seats{priority_level="bulk"} 5`) &&
			strings.Contains(m, `apiserver_flowcontrol_nominal_limit_seats{priority_level="one"} 1`)
	})
	return e
}

// createMany creates n objects with create(i), 8 at a time.
func createMany(t *testing.T, n int, create func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := create(i); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestListTakesSeatsByObjectCount: with lists estimated by object count
// (SizeBasedListCostEstimate off) and 450 configmaps stored (counted into
// apiserver_resource_objects), a list of them from the watch cache takes
// ceil(450/100) = 5 seats, all of its level's: while it runs, even a
// one-seat list of the level is turned away. Four one-seat lists leave
// one seat: a fifth gets it, the big list does not.
func TestListTakesSeatsByObjectCount(t *testing.T) {
	b := &listBlocker{entered: make(chan string, 16), release: make(chan struct{}, 16)}
	e := workEnv(t, b, func(c *apiserver.Config) { c.DisableSizeBasedListCostEstimate = true })
	createMany(t, 450, func(i int) error {
		_, err := e.cs.CoreV1().ConfigMaps("default").Create(context.Background(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{})
		return err
	})
	// 451 with the API server's legacy token tracking ConfigMap.
	eventually(t, "apiserver_resource_objects counts the configmaps", func() bool {
		return strings.Contains(string(e.do("GET", "/metrics", nil).body), `apiserver_resource_objects{group="",resource="configmaps"} 451`)
	})
	list := func(resource string) response {
		return e.do("GET", "/api/v1/namespaces/default/"+resource+"?resourceVersion=0", nil, "Impersonate-User", "lister")
	}
	done := make(chan response, 16)
	go func() { done <- list("configmaps") }()
	if got := <-b.entered; got != "configmaps" {
		t.Fatalf("held a list of %s", got)
	}
	r := list("limitranges")
	expectStatus(t, r, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "Too many requests")
	b.release <- struct{}{}
	if r := <-done; r.code != http.StatusOK {
		t.Fatalf("the big list: %d %s", r.code, r.body)
	}

	for range 4 {
		go func() { done <- list("limitranges") }()
		if got := <-b.entered; got != "limitranges" {
			t.Fatalf("held a list of %s", got)
		}
	}
	r = list("configmaps") // 5 seats, 1 free
	expectStatus(t, r, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "Too many requests")
	go func() { done <- list("limitranges") }()
	if got := <-b.entered; got != "limitranges" {
		t.Fatalf("held a list of %s", got)
	}
	for range 5 {
		b.release <- struct{}{}
	}
	for range 5 {
		if r := <-done; r.code != http.StatusOK {
			t.Errorf("a small list: %d %s", r.code, r.body)
		}
	}
	// The estimates are in /metrics: the six small lists (one turned
	// away) at 1 seat, the two big ones (one turned away) at 5.
	m := string(e.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="bulk",priority_level="bulk",le="1"} 6`,
		`apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="bulk",priority_level="bulk",le="4"} 6`,
		`apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="bulk",priority_level="bulk",le="10"} 8`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestListTakesSeatsBySize: by default a list takes a seat per 100 kB it
// holds (from the watch cache, at most 1 MB: 10 seats). 450 small
// configmaps (~70 kB) take one seat, so that another list of the 5-seat
// level runs beside it; 450 secrets of 2 kB (over 900 kB, as
// apiserver_resource_size_estimate_bytes says) take 10, more than the
// level has: the list runs alone and turns a one-seat list away.
func TestListTakesSeatsBySize(t *testing.T) {
	b := &listBlocker{entered: make(chan string, 16), release: make(chan struct{}, 16)}
	e := workEnv(t, b)
	createMany(t, 450, func(i int) error {
		_, err := e.cs.CoreV1().ConfigMaps("default").Create(context.Background(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}}, metav1.CreateOptions{})
		return err
	})
	payload := make([]byte, 2000)
	createMany(t, 450, func(i int) error {
		_, err := e.cs.CoreV1().Secrets("default").Create(context.Background(),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%03d", i)}, Data: map[string][]byte{"v": payload}}, metav1.CreateOptions{})
		return err
	})
	sizeOf := func(m, resource string) (bytes float64) {
		prefix := `apiserver_resource_size_estimate_bytes{group="",resource="` + resource + `"} `
		for line := range strings.SplitSeq(m, "\n") {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				fmt.Sscan(v, &bytes)
			}
		}
		return bytes
	}
	// 451 configmaps with the API server's legacy token tracking one.
	eventually(t, "the configmaps and the secrets are counted and weighed", func() bool {
		m := string(e.do("GET", "/metrics", nil).body)
		return strings.Contains(m, `apiserver_resource_objects{group="",resource="configmaps"} 451`) &&
			strings.Contains(m, `apiserver_resource_objects{group="",resource="secrets"} 450`) &&
			sizeOf(m, "configmaps") > 0 && sizeOf(m, "secrets") > 900_000
	})
	m := string(e.do("GET", "/metrics", nil).body)
	if cms := sizeOf(m, "configmaps"); cms > 100_000 {
		t.Fatalf("450 empty configmaps weigh %v bytes", cms)
	}
	list := func(resource string) response {
		return e.do("GET", "/api/v1/namespaces/default/"+resource+"?resourceVersion=0", nil, "Impersonate-User", "lister")
	}
	done := make(chan response, 16)
	hold := func(resource string) {
		t.Helper()
		go func() { done <- list(resource) }()
		select {
		case got := <-b.entered:
			if got != resource {
				t.Fatalf("held a list of %s, want %s", got, resource)
			}
		case r := <-done:
			t.Fatalf("the list of %s ended without being held: %d %s", resource, r.code, r.body)
		}
	}
	finish := func(n int) {
		t.Helper()
		for range n {
			b.release <- struct{}{}
		}
		for range n {
			if r := <-done; r.code != http.StatusOK {
				t.Fatalf("a held list: %d %s", r.code, r.body)
			}
		}
	}
	hold("configmaps")  // 1 seat: 4 left
	hold("limitranges") // by object count the configmaps would have taken all 5
	finish(2)
	hold("secrets") // 10 seats: the level's all
	r := list("limitranges")
	expectStatus(t, r, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "Too many requests")
	finish(1)
	// The estimates: the configmaps and both lists of limitranges at 1
	// seat, the secrets at 10.
	m = string(e.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="bulk",priority_level="bulk",le="1"} 3`,
		`apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="bulk",priority_level="bulk",le="4"} 3`,
		`apiserver_flowcontrol_work_estimated_seats_bucket{flow_schema="bulk",priority_level="bulk",le="10"} 4`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestWatchHoldsItsSeatUntilItsInitialEventsAreSent: a watch from
// resourceVersion 0 takes its level's one seat until the watch cache has
// handed its initial events on: while its client does not read them
// (~20 MB of secrets, more than the connection buffers), another request
// of the level is turned away; once they are read, the seat is free
// although the watch goes on. A client that goes away during the initial
// events gives the seat back too.
func TestWatchHoldsItsSeatUntilItsInitialEventsAreSent(t *testing.T) {
	b := &listBlocker{entered: make(chan string, 16), release: make(chan struct{}, 16)}
	e := workEnv(t, b)
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "big"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 24
	payload := make([]byte, 900<<10)
	createMany(t, n, func(i int) error {
		_, err := e.cs.CoreV1().Secrets("big").Create(context.Background(),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%02d", i)}, Data: map[string][]byte{"v": payload}}, metav1.CreateOptions{})
		return err
	})
	get := func() response {
		return e.do("GET", "/api/v1/namespaces/big/secrets/s-00", nil, "Impersonate-User", "watcher")
	}
	if r := get(); r.code != http.StatusOK {
		t.Fatalf("a get with the level free: %d", r.code)
	}
	turnedAway := func(what string) {
		t.Helper()
		if r := get(); r.code != http.StatusTooManyRequests {
			t.Fatalf("%s: a get of the level got %d, want 429", what, r.code)
		}
	}
	startWatch := func(ctx context.Context) *http.Response {
		req, err := http.NewRequestWithContext(ctx, "GET", e.url+"/api/v1/namespaces/big/secrets?watch=true&resourceVersion=0", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Impersonate-User", "watcher")
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch: %d", resp.StatusCode)
		}
		return resp
	}

	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	resp := startWatch(wctx)
	defer resp.Body.Close()
	time.Sleep(200 * time.Millisecond) // the server fills the buffers
	turnedAway("while the initial events are not read")
	rd := bufio.NewReaderSize(resp.Body, 1<<20)
	for i := range n {
		line, err := rd.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, `{"type":"ADDED"`) {
			t.Fatalf("initial event %d: %.60s, %v", i, line, err)
		}
	}
	eventually(t, "the seat is free while the watch goes on", func() bool { return get().code == http.StatusOK })

	// A client that goes away before its initial events are sent.
	wctx2, stop2 := context.WithCancel(context.Background())
	resp2 := startWatch(wctx2)
	time.Sleep(200 * time.Millisecond)
	turnedAway("while the second watch's initial events are not read")
	stop2()
	resp2.Body.Close()
	eventually(t, "the seat of the abandoned watch is free", func() bool { return get().code == http.StatusOK })
}
