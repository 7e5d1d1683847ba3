// Command backoffice is the back-office service: see README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"backoffice/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, app.Env{Args: os.Args[1:], Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(app.Report(os.Stderr, err))
}
