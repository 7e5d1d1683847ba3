package oauth_test

import (
	"context"
	"fmt"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"backoffice/internal/oauth"
	"backoffice/internal/oauth/oauthtest"
)

// BenchmarkVerify is one token's check: "full" is a token seen for the first time (parse, key,
// signature, claims), "kept" the same token again (the verified-token cache), per algorithm.
func BenchmarkVerify(b *testing.B) {
	p := oauthtest.New(b)
	p.AddKey(b, "rs", jose.RS256)
	c := newClock()
	v, err := oauth.New(context.Background(), oauth.Config{Issuer: p.Issuer, Audience: oauthtest.Audience, HTTPClient: p.Client(), Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, kid := range []string{"k1", "rs"} {
		alg := map[string]string{"k1": "ES256", "rs": "RS256"}[kid]
		b.Run("full/"+alg, func(b *testing.B) {
			// Tokens that differ (by jti), made beforehand: none is in the cache.
			tokens := make([]string, b.N)
			for i := range tokens {
				tokens[i] = p.Token(b, user, c.Now(), func(c *oauthtest.Claims, h *oauthtest.Header) {
					h.KeyID, c.Extra = kid, map[string]any{"jti": fmt.Sprint(i)}
				})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := v.Verify(ctx, tokens[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("kept/"+alg, func(b *testing.B) {
			tok := p.Token(b, user, c.Now(), func(_ *oauthtest.Claims, h *oauthtest.Header) { h.KeyID = kid })
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
