package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"backoffice/client"
)

func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey("demo-staff-api-key-not-for-production"))
	if err != nil {
		log.Fatal(err)
	}
	// Every SAM action log of a lead, newest first, 100 per request.
	for l, err := range c.SAMActionLogs(ctx, "00000000-0000-4000-8000-000000000301", 100) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(l.ActionDate, l.Action, l.SamID)
	}
	// Errors are *client.Error, with the service's status, code and detail.
	_, err = c.PushDeviceParameters(ctx, "00000000-0000-4000-8000-000000000801", "00000000-0000-4000-8000-000000001101",
		client.WithIdempotencyKey("retry-of-ticket-4711"))
	if e := (*client.Error)(nil); errors.As(err, &e) && e.Code == "push_in_progress" {
		fmt.Println("another push of this line item is running; try later")
	}
}
