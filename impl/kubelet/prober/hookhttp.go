package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubeversion"
)

// userAgentVersion is the Kubernetes major.minor version in the
// kubelet's probe and hook user agents ("kube-probe/1.37",
// "kube-lifecycle/1.37"), upstream's version.Get() of the kubelet binary:
// kubeproof's version (kubeversion.Default).
var userAgentVersion = kubeversion.UserAgentVersion(kubeversion.Default)

// newHTTPGetRequest is an httpGet action's request as upstream's kubelet
// builds it (NewRequestForHTTPGetAction): scheme lower-cased, http by
// default; host the action's, else podIP; the path parsed as a URL (a
// query stays a query; one that does not parse is taken as a bare path);
// the action's headers, User-Agent "kube-<purpose>/<version>" and Accept
// "*/*" unless they set them (an empty Accept removes it), Host from a
// Host header.
func newHTTPGetRequest(ctx context.Context, hg *v1.HTTPGetAction, port int, podIP, purpose string) (*http.Request, error) {
	scheme := strings.ToLower(string(hg.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := hg.Host
	if host == "" {
		host = podIP
	}
	u, err := url.Parse(hg.Path)
	if err != nil {
		u = &url.URL{Path: hg.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := make(http.Header, len(hg.HTTPHeaders)+2)
	for _, h := range hg.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", "kube-"+purpose+"/"+userAgentVersion)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// hookClient sends HTTP lifecycle hooks as upstream's kubelet's lifecycle
// client: HTTPS without verifying the server (the kubelet has nothing to
// verify a container's certificate with), no proxy, redirects followed on
// the same host only (at most 10; one to another host is the answer).
// It carries no credentials and must not: hooks go to any host a pod
// names.
var hookClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as upstream's lifecycle client
	},
	CheckRedirect: sameHostRedirects,
}

// sameHostRedirects is upstream's kubelet's redirect policy for probes and
// hooks (followNonLocalRedirects false): a redirect to another host is
// not followed, its response is the answer; at most 10 on the same host.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// sendHook sends an HTTP hook's request; only a request that fails fails
// the hook. An HTTPS request a server answers over plain HTTP is sent
// again over HTTP without its Authorization header, as upstream's
// runHTTPHandler does; when that succeeds the hook does, and fellBack
// (if any) is told the host:port (upstream's LifecycleHTTPFallback
// event). When it fails too, the HTTPS request's error stands.
func sendHook(ctx context.Context, req *http.Request, fellBack func(host string)) error {
	resp, err := hookClient.Do(req)
	discardBody(resp)
	if !answeredOverHTTP(err) {
		return err
	}
	retry := req.Clone(ctx)
	retry.URL.Scheme = "http"
	retry.Header.Del("Authorization")
	resp, retryErr := hookClient.Do(retry)
	discardBody(resp)
	if retryErr != nil {
		return err
	}
	if fellBack != nil {
		fellBack(retry.URL.Host)
	}
	return nil
}

// answeredOverHTTP: err is Go's HTTP client's for an HTTPS request a
// server answered in plain HTTP.
func answeredOverHTTP(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && ue.Err != nil && strings.Contains(ue.Err.Error(), "server gave HTTP response to HTTPS client")
}

// maxHookBody is how much of a hook's answer is read so that its
// connection can be reused (upstream's 10 KiB).
const maxHookBody = 10 << 10

func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxHookBody {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHookBody))
	}
}
