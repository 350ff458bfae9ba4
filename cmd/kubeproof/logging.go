package main

import (
	"fmt"
	"log/slog"
	"os"
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
	slog.SetDefault(l)
	// client-go logs through klog; send it through the same handler so
	// --log-level governs everything.
	klog.SetSlogLogger(l)
	return l, nil
}
