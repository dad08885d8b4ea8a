package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/zkgroup/zkgroup/cmd/zkgroup/internal/ops"
	"github.com/zkgroup/zkgroup/internal/zkdata"
)

// cmdLeave tells the group that a stopped static member (instance_id with
// restart_grace) does not come back: it deletes the member's restart
// marker, so that the other members take its partitions over at once
// instead of after its grace. SIGTERM keeps the marker (a restart); this
// is how a member stops for good. It refuses, with exit 1, a member that
// is registered (stop it first) and one without a marker.
func cmdLeave(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("leave", stderr)
	var g groupFlags
	g.registerZooKeeper(fs)
	id := fs.String("instance-id", "", "the stopped member's instance_id (default: instance_id of the config, env ZKGROUP_INSTANCE_ID)")
	if code, ok := g.parse(args, stdout, stderr); !ok {
		return code
	}
	if *id == "" {
		*id = g.cfg.InstanceID
	}
	if *id == "" {
		return fail(stdout, stderr, g.json, exitUsage, fmt.Errorf("%w: --instance-id is required (or instance_id: in --config, or ZKGROUP_INSTANCE_ID)", errUsage))
	}
	if err := zkdata.ValidateNodeName("--instance-id", *id); err != nil {
		return fail(stdout, stderr, g.json, exitUsage, fmt.Errorf("%w: %w", errUsage, err))
	}
	w := &lockedWriter{w: stderr}
	sess, err := g.connectZooKeeper(w, slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelError})))
	if err != nil {
		return fail(stdout, stderr, g.json, exitFor(err), err)
	}
	defer sess.Close()
	if err := ops.Forget(sess, g.group, *id); err != nil {
		return fail(stdout, stderr, g.json, exitFor(err), err)
	}
	if g.json {
		_ = printJSON(stdout, map[string]any{"group": g.group, "instance_id": *id, "left": true})
		return exitOK
	}
	fmt.Fprintf(stdout, "member %s left group %s: the other members take its partitions over now\n", *id, g.group)
	return exitOK
}
