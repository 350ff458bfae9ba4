package credentialprovider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderapi "k8s.io/kubelet/pkg/apis/credentialprovider"
	"k8s.io/kubelet/pkg/apis/credentialprovider/install"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

// pluginCodecs encode requests and decode responses of the exec protocol
// in its three versions, strictly, as upstream's codecs.
var (
	pluginScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		install.Install(s)
		return s
	}()
	pluginCodecs = serializer.NewCodecFactory(pluginScheme, serializer.EnableStrict)
)

// DefaultExecTimeout is how long a plugin may run, upstream's catch-all
// minute.
const DefaultExecTimeout = time.Minute

// ExecPlugin runs a credential provider executable: Env added to the
// kubelet's own environment (and overriding it), Args its arguments, the
// request on stdin in APIVersion, the response read from stdout, which
// must be of the same version.
type ExecPlugin struct {
	Name, Path, APIVersion string
	Args                   []string
	Env                    []kubeletconfigv1.ExecEnvVar
	// Timeout bounds a run (0: DefaultExecTimeout).
	Timeout time.Duration
}

// Exec runs the plugin for image (with a service account token and
// annotations in token mode, in the request's serviceAccountToken and
// serviceAccountAnnotations), with upstream's errors: the run's (with its
// stderr), a response of another apiVersion, and one that does not decode
// (without its text, which may hold credentials).
func (e *ExecPlugin) Exec(ctx context.Context, image, serviceAccountToken string, serviceAccountAnnotations map[string]string) (*credentialproviderv1.CredentialProviderResponse, error) {
	gv, err := schema.ParseGroupVersion(e.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("invalid apiVersion: %q", e.APIVersion)
	}
	info, ok := runtime.SerializerInfoForMediaType(pluginCodecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("unsupported media type %q", runtime.ContentTypeJSON)
	}
	req, err := runtime.Encode(pluginCodecs.EncoderForVersion(info.Serializer, gv), &credentialproviderapi.CredentialProviderRequest{
		Image: image, ServiceAccountToken: serviceAccountToken, ServiceAccountAnnotations: serviceAccountAnnotations})
	if err != nil {
		return nil, fmt.Errorf("failed to encode auth request: %w", err)
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, e.Path, e.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &stdout, &stderr
	// A killed plugin's children may hold its stdout open: do not wait
	// for them long.
	cmd.WaitDelay = time.Second
	env := os.Environ()
	for _, v := range e.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	cmd.Env = env
	err = cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("error execing credential provider plugin %s for image %s: %w: %s", e.Name, image, err, stderr.String())
	}
	data := stdout.Bytes()
	gvk, err := jsonserializer.DefaultMetaFactory.Interpret(data)
	if err != nil {
		return nil, fmt.Errorf("error reading GVK from response: %w", err)
	}
	if got := gvk.GroupVersion().String(); got != e.APIVersion {
		return nil, fmt.Errorf("apiVersion from credential plugin response did not match expected apiVersion:%s, actual apiVersion:%s", e.APIVersion, got)
	}
	resp, err := decodeResponse(data)
	if err != nil {
		return nil, errors.New("error decoding credential provider plugin response from stdout")
	}
	return resp, nil
}

// decodeResponse decodes a CredentialProviderResponse of any version
// (into the internal type, as upstream's, then v1's).
func decodeResponse(data []byte) (*credentialproviderv1.CredentialProviderResponse, error) {
	obj, gvk, err := pluginCodecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	if gvk.Kind != "CredentialProviderResponse" {
		return nil, fmt.Errorf("failed to decode CredentialProviderResponse, unexpected Kind: %q", gvk.Kind)
	}
	if gvk.Group != credentialproviderapi.GroupName {
		return nil, fmt.Errorf("failed to decode CredentialProviderResponse, unexpected Group: %s", gvk.Group)
	}
	internal, ok := obj.(*credentialproviderapi.CredentialProviderResponse)
	if !ok {
		return nil, fmt.Errorf("unable to convert %T to *CredentialProviderResponse", obj)
	}
	resp := &credentialproviderv1.CredentialProviderResponse{}
	if err := pluginScheme.Convert(internal, resp, nil); err != nil {
		return nil, fmt.Errorf("converting CredentialProviderResponse: %w", err)
	}
	return resp, nil
}
