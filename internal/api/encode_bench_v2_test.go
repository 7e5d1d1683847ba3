//go:build goexperiment.jsonv2

package api

import (
	"bytes"
	"encoding/json/v2"
	"testing"
)

// BenchmarkEncodeV2 is BenchmarkEncode's bodies encoded by JSON v2, which formats a time.Time
// itself (no Marshaler call, no compaction) and escapes no HTML by default.
//
//	GOEXPERIMENT=jsonv2 go test ./internal/api -run '^$' -bench 'EncodeV2' -benchmem -cpu 1 -count 6
func BenchmarkEncodeV2(b *testing.B) {
	for _, body := range benchBodies() {
		b.Run(body.name+"/json_v2", func(b *testing.B) {
			for b.Loop() {
				var buf bytes.Buffer
				if err := json.MarshalWrite(&buf, body.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestEncodeV2Agrees(t *testing.T) {
	for _, body := range benchBodies() {
		want, _ := encode(body.v)
		var buf bytes.Buffer
		if err := json.MarshalWrite(&buf, body.v); err != nil || buf.String()+"\n" != string(want) {
			t.Errorf("%s: json v2 %s (%v), writeJSON %s", body.name, buf.Bytes(), err, want)
		}
	}
}
