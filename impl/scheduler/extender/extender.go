// Package extender calls HTTP scheduler extenders, as kube-scheduler does:
// after the plugins filtered the nodes, each interested extender may filter
// them further (its failed nodes join the diagnosis); after the plugins
// scored them, each interested extender's scores (0–10) are scaled to 0–100,
// multiplied by its weight and added; an extender with a bind verb binds the
// pods it is interested in instead of the scheduler's POST pods/binding;
// an extender with a preempt verb is sent the candidate victims preemption
// found, per node, and its answer replaces them (ProcessPreemption).
package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/transport"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// HTTPExtender is one configured extender.
type HTTPExtender struct {
	url              string
	filterVerb       string
	prioritizeVerb   string
	bindVerb         string
	preemptVerb      string
	weight           int64
	nodeCacheCapable bool
	ignorable        bool
	managedResources sets.Set[string]
	client           *http.Client
}

// New builds an extender from its configuration.
func New(c config.Extender) (*HTTPExtender, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.EnableHTTPS {
		tc := transport.TLSConfig{}
		if t := c.TLSConfig; t != nil {
			tc = transport.TLSConfig{
				Insecure: t.Insecure, ServerName: t.ServerName,
				CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile,
				CertData: t.CertData, KeyData: t.KeyData, CAData: t.CAData,
			}
		}
		tlsConfig, err := transport.TLSConfigFor(&transport.Config{TLS: tc})
		if err != nil {
			return nil, fmt.Errorf("extender %s: TLS configuration: %w", c.URLPrefix, err)
		}
		tr.TLSClientConfig = tlsConfig
	}
	managed := sets.New[string]()
	for _, r := range c.ManagedResources {
		managed.Insert(r.Name)
	}
	return &HTTPExtender{
		url:              strings.TrimRight(c.URLPrefix, "/"),
		filterVerb:       c.FilterVerb,
		prioritizeVerb:   c.PrioritizeVerb,
		bindVerb:         c.BindVerb,
		preemptVerb:      c.PreemptVerb,
		weight:           c.Weight,
		nodeCacheCapable: c.NodeCacheCapable,
		ignorable:        c.Ignorable,
		managedResources: managed,
		client:           &http.Client{Transport: tr, Timeout: c.HTTPTimeout.Duration},
	}, nil
}

// Name is the extender's URL prefix.
func (h *HTTPExtender) Name() string { return h.url }

// IsFilter, IsPrioritizer and IsBinder say which calls the extender offers.
func (h *HTTPExtender) IsFilter() bool      { return h.filterVerb != "" }
func (h *HTTPExtender) IsPrioritizer() bool { return h.prioritizeVerb != "" }
func (h *HTTPExtender) IsBinder() bool      { return h.bindVerb != "" }

// SupportsPreemption says whether the extender has a preempt verb.
func (h *HTTPExtender) SupportsPreemption() bool { return h.preemptVerb != "" }

// IsIgnorable says whether the extender's errors are ignored.
func (h *HTTPExtender) IsIgnorable() bool { return h.ignorable }

// IsInterested reports whether the pod concerns the extender: always when it
// manages no resources, else when a container requests or limits one of them.
func (h *HTTPExtender) IsInterested(pod *v1.Pod) bool {
	if h.managedResources.Len() == 0 {
		return true
	}
	uses := func(cs []v1.Container) bool {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if h.managedResources.Has(string(name)) {
					return true
				}
			}
			for name := range cs[i].Resources.Limits {
				if h.managedResources.Has(string(name)) {
					return true
				}
			}
		}
		return false
	}
	return uses(pod.Spec.Containers) || uses(pod.Spec.InitContainers)
}

// Filter sends the nodes to the extender's filter verb and returns those it
// kept (in the order given), and the failures it reported.
func (h *HTTPExtender) Filter(ctx context.Context, pod *v1.Pod, nodes []*v1.Node) (feasible []*v1.Node, failed, failedAndUnresolvable FailedNodesMap, err error) {
	if !h.IsFilter() {
		return nodes, nil, nil, nil
	}
	byName := make(map[string]*v1.Node, len(nodes))
	args := &ExtenderArgs{Pod: pod}
	if h.nodeCacheCapable {
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
			byName[n.Name] = n
		}
		args.NodeNames = &names
	} else {
		list := &v1.NodeList{Items: make([]v1.Node, len(nodes))}
		for i, n := range nodes {
			list.Items[i] = *n
			byName[n.Name] = n
		}
		args.Nodes = list
	}
	var result ExtenderFilterResult
	if err := h.send(ctx, h.filterVerb, args, &result); err != nil {
		return nil, nil, nil, err
	}
	if result.Error != "" {
		return nil, nil, nil, fmt.Errorf("extender %s filter: %s", h.url, result.Error)
	}
	var kept []string
	switch {
	case h.nodeCacheCapable && result.NodeNames != nil:
		kept = *result.NodeNames
	case result.Nodes != nil:
		for i := range result.Nodes.Items {
			kept = append(kept, result.Nodes.Items[i].Name)
		}
	}
	for _, name := range kept {
		if n, ok := byName[name]; ok {
			feasible = append(feasible, n)
		}
	}
	return feasible, result.FailedNodes, result.FailedAndUnresolvableNodes, nil
}

// Prioritize sends the nodes to the extender's prioritize verb and returns
// its scores and weight (zero scores and weight when it does not prioritize).
func (h *HTTPExtender) Prioritize(ctx context.Context, pod *v1.Pod, nodes []*v1.Node) (HostPriorityList, int64, error) {
	if !h.IsPrioritizer() {
		out := make(HostPriorityList, len(nodes))
		for i, n := range nodes {
			out[i] = HostPriority{Host: n.Name}
		}
		return out, 0, nil
	}
	args := &ExtenderArgs{Pod: pod}
	if h.nodeCacheCapable {
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		args.NodeNames = &names
	} else {
		list := &v1.NodeList{Items: make([]v1.Node, len(nodes))}
		for i, n := range nodes {
			list.Items[i] = *n
		}
		args.Nodes = list
	}
	var result HostPriorityList
	if err := h.send(ctx, h.prioritizeVerb, args, &result); err != nil {
		return nil, 0, err
	}
	return result, h.weight, nil
}

// ProcessPreemption sends the candidate victims per node to the extender's
// preempt verb and returns what it answered, its UIDs resolved to the pods
// on those nodes in nodes. An answer naming a node or pod the scheduler
// does not know is an error (the caches disagree), as in kube-scheduler.
func (h *HTTPExtender) ProcessPreemption(ctx context.Context, pod *v1.Pod, victims map[string]*fw.Victims, nodes fw.NodeInfoLister) (map[string]*fw.Victims, error) {
	if !h.SupportsPreemption() {
		return nil, fmt.Errorf("preempt verb is not defined for extender %v but run into ProcessPreemption", h.url)
	}
	args := &ExtenderPreemptionArgs{Pod: pod}
	if h.nodeCacheCapable {
		args.NodeNameToMetaVictims = make(map[string]*MetaVictims, len(victims))
		for node, v := range victims {
			mv := &MetaVictims{Pods: make([]*MetaPod, 0, len(v.Pods)), NumPDBViolations: v.NumPDBViolations}
			for _, p := range v.Pods {
				mv.Pods = append(mv.Pods, &MetaPod{UID: string(p.UID)})
			}
			args.NodeNameToMetaVictims[node] = mv
		}
	} else {
		args.NodeNameToVictims = make(map[string]*Victims, len(victims))
		for node, v := range victims {
			args.NodeNameToVictims[node] = &Victims{Pods: v.Pods, NumPDBViolations: v.NumPDBViolations}
		}
	}
	var result ExtenderPreemptionResult
	if err := h.send(ctx, h.preemptVerb, args, &result); err != nil {
		return nil, err
	}
	out := make(map[string]*fw.Victims, len(result.NodeNameToMetaVictims))
	for node, mv := range result.NodeNameToMetaVictims {
		ni, err := nodes.Get(node)
		if err != nil {
			return nil, fmt.Errorf("extender %v: %w", h.url, err)
		}
		v := &fw.Victims{Pods: []*v1.Pod{}}
		if mv != nil {
			v.NumPDBViolations = mv.NumPDBViolations
			for _, mp := range mv.Pods {
				p := podByUID(ni, mp.UID)
				if p == nil {
					return nil, fmt.Errorf("extender: %v claims to preempt pod (UID: %v) on node: %v, but the pod is not found on that node", h.url, mp.UID, node)
				}
				v.Pods = append(v.Pods, p)
			}
		}
		out[node] = v
	}
	return out, nil
}

func podByUID(ni *fw.NodeInfo, uid string) *v1.Pod {
	for _, pi := range ni.Pods {
		if string(pi.Pod.UID) == uid {
			return pi.Pod
		}
	}
	return nil
}

// Bind asks the extender to bind the pod.
func (h *HTTPExtender) Bind(ctx context.Context, b *v1.Binding) error {
	if !h.IsBinder() {
		return errors.New("extender does not bind")
	}
	args := &ExtenderBindingArgs{PodName: b.Name, PodNamespace: b.Namespace, PodUID: b.UID, Node: b.Target.Name}
	var result ExtenderBindingResult
	if err := h.send(ctx, h.bindVerb, args, &result); err != nil {
		return err
	}
	if result.Error != "" {
		return fmt.Errorf("extender %s bind: %s", h.url, result.Error)
	}
	return nil
}

// send POSTs args as JSON to urlPrefix/verb and decodes the answer.
func (h *HTTPExtender) send(ctx context.Context, verb string, args, result any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	url := h.url + "/" + verb
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("calling extender %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return fmt.Errorf("failed %v with extender at URL %v, code %v", verb, h.url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(result); err != nil {
		return fmt.Errorf("decoding the answer of extender %s: %w", url, err)
	}
	return nil
}
