package linearizability

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
)

// WriteReport writes a report of h and r into dir: history.html
// (porcupine's visualization of the per-key histories, with every watch
// event and non-linearizable read added as annotations), operations.json
// and watches.json (the raw history), violations.json and summary.txt.
func WriteReport(dir string, h *History, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating report dir: %w", err)
	}
	info := r.info
	info.AddAnnotations(annotations(h))
	if err := porcupine.VisualizePath(keyModel, info, filepath.Join(dir, "history.html")); err != nil {
		return fmt.Errorf("writing visualization: %w", err)
	}
	for name, v := range map[string]any{
		"operations.json": h.Ops,
		"watches.json":    h.Watches,
		"violations.json": r.Violations,
		"history.json":    h,
	} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return fmt.Errorf("encoding %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	summary := Summary(h, r) + "\n"
	for _, v := range r.Violations {
		summary += v.String() + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary), 0o644); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	return nil
}

// annotations shows what porcupine does not check — non-quorum reads,
// lists and watch events — on the same time line, one row per client and
// one per watch stream.
func annotations(h *History) []porcupine.Annotation {
	var out []porcupine.Annotation
	for i := range h.Ops {
		o := &h.Ops[i]
		if inPerKeyModel(o) {
			continue
		}
		out = append(out, porcupine.Annotation{ClientId: o.Client, Start: o.Call, End: o.Return, Description: describeOp(o), BackgroundColor: "#e0e0ff"})
	}
	for _, w := range h.Watches {
		tag := fmt.Sprintf("watch %d", w.ID)
		for _, ev := range w.Events {
			d := fmt.Sprintf("%s %s=%s[%s]@%d", ev.Type, ev.Object.Key, ev.Object.Value, ev.Object.Group, ev.Object.RV)
			out = append(out, porcupine.Annotation{Tag: tag, Start: ev.Time, End: ev.Time, Description: d, BackgroundColor: "#e0ffe0"})
		}
	}
	return out
}
