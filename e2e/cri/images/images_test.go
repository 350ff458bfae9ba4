package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// readTar maps each entry name of a tar to its header and content.
func readTar(t *testing.T, data []byte) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	hs, bodies := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs, bodies
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hs[h.Name], bodies[h.Name] = h, b
	}
}

func TestDockerArchiveLayout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "img.tar")
	img := Image{Ref: "kubeproof.local/x:1", Entrypoint: []string{"/bin/x"}, Files: []File{
		{Path: "bin/x", Mode: 0o755, Data: []byte("#!")},
		{Path: "usr/bin/y", Link: "/bin/x"},
	}}
	if err := WriteDockerArchive(file, img); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, bodies := readTar(t, data)
	var manifest []manifestEntry
	if err := json.Unmarshal(bodies["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %s %v", bodies["manifest.json"], err)
	}
	m := manifest[0]
	if len(m.RepoTags) != 1 || m.RepoTags[0] != img.Ref || len(m.Layers) != 1 {
		t.Fatalf("manifest: %+v", m)
	}
	var cfg imageConfig
	if err := json.Unmarshal(bodies[m.Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture == "" || len(cfg.RootFS.DiffIDs) != 1 ||
		cfg.RootFS.DiffIDs[0] != "sha256:"+sha(bodies[m.Layers[0]]) || cfg.Config.Entrypoint[0] != "/bin/x" {
		t.Fatalf("config: %+v", cfg)
	}
	if m.Config != sha(bodies[m.Config])+".json" {
		t.Fatalf("config %s is not named by its digest", m.Config)
	}
	lh, lb := readTar(t, bodies[m.Layers[0]])
	for _, dir := range []string{"bin/", "usr/", "usr/bin/"} {
		if h := lh[dir]; h == nil || h.Typeflag != tar.TypeDir {
			t.Errorf("layer lacks parent directory %s", dir)
		}
	}
	if string(lb["bin/x"]) != "#!" || lh["bin/x"].Mode != 0o755 {
		t.Errorf("bin/x: %+v %q", lh["bin/x"], lb["bin/x"])
	}
	if h := lh["usr/bin/y"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/x" {
		t.Errorf("usr/bin/y: %+v", h)
	}
	// The same input gives the same archive (and so the same image id).
	file2 := filepath.Join(t.TempDir(), "img.tar")
	if err := WriteDockerArchive(file2, img); err != nil {
		t.Fatal(err)
	}
	if data2, _ := os.ReadFile(file2); !bytes.Equal(data, data2) {
		t.Error("archives of the same image differ")
	}
}
