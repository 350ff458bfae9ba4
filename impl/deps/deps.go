// Package deps pins the chosen dependency stack in go.mod while the packages
// that use each dependency are being written. It is removed once every
// dependency below is imported by real code.
package deps

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/containernetworking/cni/libcni"
	_ "github.com/containernetworking/plugins/pkg/ns"
	_ "github.com/google/gofuzz"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "go.etcd.io/etcd/tests/v3/framework/integration"
	_ "google.golang.org/grpc"
	_ "k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	_ "k8s.io/apimachinery/pkg/api/validation"
	_ "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/tools/events"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
	_ "k8s.io/kubectl/pkg/cmd"
	_ "pgregory.net/rapid"
	_ "sigs.k8s.io/randfill"
	_ "sigs.k8s.io/yaml"
)
