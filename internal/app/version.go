package app

import (
	"context"
	"fmt"

	"backoffice/internal/buildinfo"
)

// runVersion prints which build this is. It needs no configuration: a broken one must not hide
// which build runs.
func runVersion(_ context.Context, env Env, _ Config, args []string) error {
	// No flags: help has no flag section to print.
	if len(args) > 0 && isHelpArg(args[0]) {
		return &helpRequest{name: "version"}
	}
	if len(args) > 0 {
		return usagef("unexpected argument %q: it takes no arguments", args[0])
	}
	fmt.Fprint(env.Stdout, buildinfo.Read().Text())
	return nil
}

// isVersionFlag tells the spellings of `backoffice --version`.
func isVersionFlag(arg string) bool { return arg == "--version" || arg == "-version" }
