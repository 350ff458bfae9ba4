package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubeproof/kubeproof/model"
	"github.com/kubeproof/kubeproof/model/checker"
)

func main() {
	var results []checker.Result
	for _, name := range strings.Split(os.Args[1], ",") {
		cfg, err := model.LoadConfig(name)
		if err != nil {
			panic(err)
		}
		m, err := model.New(cfg, "")
		if err != nil {
			panic(err)
		}
		fmt.Fprintln(os.Stderr, "checking", name)
		r, err := checker.Check(context.Background(), m, checker.Options{Symmetry: true, Progress: os.Stderr, ProgressInterval: 30 * time.Second})
		if err != nil {
			panic(err)
		}
		if r.Violation != nil {
			fmt.Println(checker.FormatViolation(m, r.Violation))
		}
		results = append(results, r)
	}
	checker.WriteSummary(os.Stdout, results)
}
