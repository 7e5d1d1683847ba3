package client

import (
	"context"
	"time"
)

// SetSleep replaces how c waits out a 429, for tests on a fake clock.
func SetSleep(c *Client, f func(context.Context, time.Duration) error) { c.sleep = f }
