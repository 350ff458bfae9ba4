package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// logOptions are the logging flags every subcommand has. Logs are
// structured (slog, text to stderr) and quiet by default.
type logOptions struct {
	level  string
	format string
}

func (o *logOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.level, "log-level", "warn", "Log level: debug, info, warn or error.")
	fs.StringVar(&o.format, "log-format", "text", "Log format: text or json.")
}

// logger builds the configured logger and makes it the default.
func (o *logOptions) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(o.format) {
	case "text":
		h = slog.NewTextHandler(os.Stderr, hopts)
	case "json":
		h = slog.NewJSONHandler(os.Stderr, hopts)
	default:
		return nil, fmt.Errorf("--log-format: unknown format %q (text or json)", o.format)
	}
	l := slog.New(h)
	// client-go's klog follows the default logger (klogHandler), so
	// --log-level governs everything.
	slog.SetDefault(l)
	return l, nil
}

// klog (client-go's logging) is given its logger once, before main or any
// test starts a goroutine: klog's logger may not be replaced while
// another goroutine logs (every client-go request reads it), and a
// command's logger is set up while an in-process cluster's clients run
// (the commands' tests). It writes to the default logger of each record's
// time, which logOptions.logger sets.
func init() { klog.SetSlogLogger(slog.New(klogHandler{})) }

// klogHandler is a slog.Handler handing each record to slog.Default()'s
// handler as it is then, with the attributes and groups given to it
// replayed on that handler.
type klogHandler struct {
	with []func(slog.Handler) slog.Handler
}

func (h klogHandler) current() slog.Handler {
	d := slog.Default().Handler()
	for _, w := range h.with {
		d = w(d)
	}
	return d
}

func (h klogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.current().Enabled(ctx, level)
}

func (h klogHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.current().Handle(ctx, r)
}

func (h klogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return klogHandler{with: append(slices.Clip(h.with), func(d slog.Handler) slog.Handler { return d.WithAttrs(attrs) })}
}

func (h klogHandler) WithGroup(name string) slog.Handler {
	return klogHandler{with: append(slices.Clip(h.with), func(d slog.Handler) slog.Handler { return d.WithGroup(name) })}
}
