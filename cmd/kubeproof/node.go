package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// newNodeCommand is `kubeproof node fail|recover|list`: fault injection for
// the simulated nodes of a running `kubeproof up`, through the admin socket
// that `up` serves in its data directory.
func newNodeCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Fail and recover the simulated nodes of a running kubeproof up",
		Long: `Fail and recover the simulated nodes of a running kubeproof up (which listens on
DATA_DIR/` + nodeAdminSocket + `; use the same --data-dir).

A failed node's kubelet stops renewing its Lease, posting node status and syncing pods,
as if the machine were cut off from the API server; its containers keep running. After
up's --node-monitor-grace-period the node lifecycle controller marks the node Unknown and
taints it; after --pod-eviction-timeout its pods are evicted and their controllers
recreate them on other nodes. Recovering the node resumes its kubelet, which finishes
the evicted pods' termination.`,
		Example: `  kubeproof up --nodes 3 --node-monitor-grace-period 20s --pod-eviction-timeout 5s &
  kubeproof node fail node-2
  kubeproof node list
  kubeproof node recover node-2`,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", ".kubeproof", "The --data-dir of the running kubeproof up.")
	change := func(verb, short string) *cobra.Command {
		return &cobra.Command{
			Use:   verb + " NODE...",
			Short: short,
			Args:  cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, names []string) error {
				c := nodeAdminClient(dataDir)
				for _, name := range names {
					var st nodeState
					if err := c.do(cmd.Context(), http.MethodPost, "/nodes/"+url.PathEscape(name)+"/"+verb, &st); err != nil {
						return fmt.Errorf("%s %s: %w", verb, name, err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "node/%s %s\n", st.Name, stateWord(st.Failed))
				}
				return nil
			},
		}
	}
	pressure := &cobra.Command{
		Use:   "pressure NODE CONDITION[,CONDITION...]|none|SIGNAL=QUANTITY[,...]",
		Short: "Make a simulated node short of memory, disk or process IDs (MemoryPressure, DiskPressure, PIDPressure; or what it reports available, e.g. memory.available=50Mi): its eviction manager reports the pressure, refuses pods and evicts running ones; after none, the condition clears once the pressure transition period (5 m by default) has passed",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			query := "?conditions=" + url.QueryEscape(args[1])
			if strings.Contains(args[1], "=") {
				if _, err := eviction.ParseAvailable(args[1]); err != nil {
					return err
				}
				query = "?available=" + url.QueryEscape(args[1])
			} else if _, err := parsePressure(args[1]); err != nil {
				return err
			}
			var st nodeState
			path := "/nodes/" + url.PathEscape(args[0]) + "/pressure" + query
			if err := nodeAdminClient(dataDir).do(cmd.Context(), http.MethodPost, path, &st); err != nil {
				return fmt.Errorf("pressure %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node/%s pressure %s\n", st.Name, pressureWord(st.Pressure))
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the simulated nodes and whether each is failed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var nodes []nodeState
			if err := nodeAdminClient(dataDir).do(cmd.Context(), http.MethodGet, "/nodes", &nodes); err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATE\tPRESSURE")
			for _, n := range nodes {
				fmt.Fprintf(w, "%s\t%s\t%s\n", n.Name, stateWord(n.Failed), pressureWord(n.Pressure))
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(
		change("fail", "Fail simulated nodes: their kubelets stop heartbeating and syncing pods"),
		change("recover", "Recover failed simulated nodes: their kubelets resume"),
		pressure,
		list,
	)
	return cmd
}

func pressureWord(conds []string) string {
	if len(conds) == 0 {
		return "none"
	}
	return strings.Join(conds, ",")
}

func stateWord(failed bool) string {
	if failed {
		return "failed"
	}
	return "running"
}

// adminClient talks HTTP to `up`'s node admin socket.
type adminClient struct {
	socket string
	http   *http.Client
}

func nodeAdminClient(dataDir string) *adminClient {
	socket := filepath.Join(dataDir, nodeAdminSocket)
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &adminClient{socket: socket, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (c *adminClient) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://kubeproof-up"+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reaching kubeproof up at %s (is it running with this --data-dir?): %w", c.socket, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading reply: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s", e.Error)
		}
		return fmt.Errorf("kubeproof up answered %s", resp.Status)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding reply: %w", err)
	}
	return nil
}
