// Package images builds the e2e suite's container images without any
// registry: a pause image (a tiny static Go program, ./pause) and a busybox
// image (the host's busybox-static binary and its applet links), each
// written as a docker-archive tarball that `ctr images import` loads.
//
// A docker archive is a tar of: one uncompressed layer tar per layer, an
// image config JSON named by its sha256, and manifest.json listing the
// config, the layers and the repo tags.
package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"time"
)

// References of the images the suite imports into containerd. Neither tag
// is "latest", so the kubelet's default pull policy is IfNotPresent and it
// never tries to pull them.
const (
	PauseRef   = "kubeproof.local/pause:3.10"
	BusyboxRef = "kubeproof.local/busybox:1.35"
)

// File is one entry of an image's single layer.
type File struct {
	Path string // relative to /, without a leading slash
	Mode int64  // permission bits
	Data []byte // regular file content
	Link string // symlink target, when non-empty
	Dir  bool
}

// Image is a one-layer image.
type Image struct {
	Ref        string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	Files      []File
}

// epoch is the modification time of every entry, so that the same inputs
// give the same archive.
var epoch = time.Unix(0, 0)

// layerTar is the layer as an uncompressed tar, with every parent
// directory present.
func layerTar(files []File) ([]byte, error) {
	byPath := map[string]File{}
	for _, f := range files {
		p := strings.Trim(path.Clean("/"+f.Path), "/")
		if p == "" {
			continue
		}
		f.Path = p
		byPath[p] = f
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = File{Path: d, Dir: true, Mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents sort before their children
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		h := &tar.Header{Name: p, Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, p+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", p, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("layer entry %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// imageConfig is the subset of the OCI/docker image config the runtime reads.
type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Created      time.Time       `json:"created"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
}

type containerConfig struct {
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	Env        []string `json:"Env,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// WriteDockerArchive writes img as a docker-archive tarball to file. The
// config names this machine's architecture and os linux, which containerd's
// import platform filter requires.
func WriteDockerArchive(file string, img Image) error {
	layer, err := layerTar(img.Files)
	if err != nil {
		return err
	}
	layerID := sha(layer)
	cfg, err := json.Marshal(imageConfig{
		Architecture: goruntime.GOARCH, OS: "linux", Created: epoch,
		Config: containerConfig{Entrypoint: img.Entrypoint, Cmd: img.Cmd, Env: img.Env, WorkingDir: img.WorkingDir},
		RootFS: rootFS{Type: "layers", DiffIDs: []string{"sha256:" + layerID}},
	})
	if err != nil {
		return err
	}
	cfgName := sha(cfg) + ".json"
	layerName := layerID + "/layer.tar"
	manifest, err := json.Marshal([]manifestEntry{{Config: cfgName, RepoTags: []string{img.Ref}, Layers: []string{layerName}}})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name string
		data []byte
	}{{layerID + "/", nil}, {layerName, layer}, {cfgName, cfg}, {"manifest.json", manifest}} {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch, Typeflag: tar.TypeReg}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing image archive %s: %w", file, err)
	}
	return nil
}

// Pause builds the pause program (github.com/kubeproof/kubeproof/e2e/cri/images/pause)
// as a static binary with goTool in workDir and returns the image around it.
func Pause(goTool, workDir string) (Image, error) {
	bin := filepath.Join(workDir, "pause")
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/kubeproof/kubeproof/e2e/cri/images/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("building pause: %w\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: PauseRef, Entrypoint: []string{"/pause"}, Files: []File{{Path: "pause", Mode: 0o755, Data: data}}}, nil
}

// IndexHTML is the content busybox httpd serves at / in the busybox image
// (/www/index.html).
const IndexHTML = "kubeproof e2e\n"

// Busybox returns a busybox image made of the static busybox binary at
// busyboxPath, a link for every applet it lists, /etc/passwd and /etc/group
// (root and nobody), /tmp and /www/index.html.
func Busybox(busyboxPath string) (Image, error) {
	data, err := os.ReadFile(busyboxPath)
	if err != nil {
		return Image{}, fmt.Errorf("reading busybox: %w", err)
	}
	out, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		return Image{}, fmt.Errorf("busybox --list-full: %w", err)
	}
	files := []File{
		{Path: "bin/busybox", Mode: 0o755, Data: data},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "tmp", Mode: 0o1777, Dir: true},
		{Path: "root", Mode: 0o700, Dir: true},
		{Path: "www/index.html", Mode: 0o644, Data: []byte(IndexHTML)},
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "bin/busybox" {
			continue
		}
		files = append(files, File{Path: applet, Link: "/bin/busybox"})
	}
	return Image{
		Ref: BusyboxRef, Cmd: []string{"sh"},
		Env:   []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Files: files,
	}, nil
}
