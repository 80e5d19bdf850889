package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/pkg/fabricdot"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/nodenamemap"
)

// errNoDot: Graphviz's dot is not on PATH.
var errNoDot = errors.New("Graphviz's dot is not installed (install graphviz, or write --dot and draw it elsewhere)")

// lookDot finds Graphviz's dot; tests replace it.
var lookDot = func() (string, error) {
	p, err := exec.LookPath("dot")
	if err != nil {
		return "", errNoDot
	}
	return p, nil
}

// drawSVG writes f as SVG into w through dot -Tsvg; dot's first line of
// complaint is the error when it fails.
func drawSVG(ctx context.Context, dot string, w io.Writer, f *model.Fabric, namer func(*model.Node) string) error {
	var in bytes.Buffer
	if err := fabricdot.Write(&in, f, fabricdot.Options{Name: namer}); err != nil {
		return err
	}
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, dot, "-Tsvg")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, w, &errb
	if err := cmd.Run(); err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(errb.String()), "\n")
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s: %s", dot, msg)
	}
	return nil
}

// mapName is the node name map's file name as the user gave it, or the
// default one.
func mapName(c *cli.Context) string {
	if f := c.String("node-name-map"); f != "" {
		return f
	}
	return nodenamemap.DefaultPath
}
