// Command idp is the identity provider of bench/load.sh: it serves an OpenID discovery document
// and a key set of one signing key over TLS, with a self-signed certificate for 127.0.0.1, and
// writes an access token (RFC 9068: typ at+jwt) signed with that key, so that the load benchmark
// can measure requests authenticated with a token beside those with a session. It writes its
// certificate for the service's SSL_CERT_FILE, then the token, then serves until killed.
//
//	idp -addr 127.0.0.1:18443 -cert idp.pem -token token.txt -sub USERID -audience https://backoffice.bench
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18443", "listen address (loopback)")
	certOut := flag.String("cert", "idp.pem", "file to write the TLS certificate to (PEM), for SSL_CERT_FILE")
	tokenOut := flag.String("token", "token.txt", "file to write the access token to")
	sub := flag.String("sub", "", "the token's sub: the id of a user of the dataset")
	audience := flag.String("audience", "https://backoffice.bench", "the token's aud")
	alg := flag.String("alg", "ES256", "ES256 or RS256")
	lifetime := flag.Duration("lifetime", 2*time.Hour, "the token's lifetime")
	flag.Parse()
	if err := run(*addr, *certOut, *tokenOut, *sub, *audience, jose.SignatureAlgorithm(*alg), *lifetime); err != nil {
		fmt.Fprintln(os.Stderr, "idp:", err)
		os.Exit(1)
	}
}

func run(addr, certOut, tokenOut, sub, audience string, alg jose.SignatureAlgorithm, lifetime time.Duration) error {
	if sub == "" {
		return fmt.Errorf("-sub is required")
	}
	var key crypto.Signer
	var err error
	switch alg {
	case jose.ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return fmt.Errorf("-alg %s: want ES256 or RS256", alg)
	}
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	issuer := "https://" + ln.Addr().String()
	cert, err := selfSigned(certOut)
	if err != nil {
		return err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "bench-1"))
	if err != nil {
		return err
	}
	now := time.Now()
	token, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: issuer, Subject: sub, Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(lifetime))}).Serialize()
	if err != nil {
		return err
	}
	if err := os.WriteFile(tokenOut, []byte(token), 0o600); err != nil {
		return err
	}
	keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "bench-1", Algorithm: string(alg), Use: "sig"}}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"issuer": issuer, "jwks_uri": issuer + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, keys) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	return srv.ServeTLS(ln, "", "")
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// selfSigned makes a certificate for 127.0.0.1 that is its own CA, and writes it to path.
func selfSigned(path string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "backoffice bench idp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
