package app

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// parseOrigins reads BACKOFFICE_CORS_ORIGINS: origins separated by commas, each exactly as a
// browser sends it in Origin (scheme://host[:port], lower case, no default port, no path).
// Anything else is refused, naming the form it should take where there is one, because a near
// miss such as a trailing slash would never match and CORS would silently stay off for that
// origin, and a host no browser sends (a wildcard, a port past 65535) would match nothing.
func parseOrigins(v string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		want, err := canonicalOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("%q is not an origin such as https://crm.example.com or http://localhost:3000: %w", o, err)
		}
		if o != want {
			return nil, fmt.Errorf("%q is not an origin as browsers send it; write %q", o, want)
		}
		out = append(out, o)
	}
	return out, nil
}

// hostProfile turns a host name into the form browsers put in Origin (the WHATWG URL standard's
// domain to ASCII: UTS #46 mapping, lower case, internationalized labels in punycode) and refuses
// one that is no domain name: a label of other than letters, digits and inner hyphens (STD3), an
// empty label, one over 63 characters or a name over 253.
var hostProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.StrictDomainName(true), idna.VerifyDNSLength(true))

// canonicalOrigin is o serialized as the Fetch standard serializes an origin: scheme http or
// https, "://", the host (a domain in lower-case ASCII, punycode for other scripts; an IPv4
// address in dotted decimal; an IPv6 address in brackets, compressed), and ":port" unless the
// port is the scheme's default. An error says why o is no origin at all.
func canonicalOrigin(o string) (string, error) {
	scheme, rest, ok := strings.Cut(o, "://")
	scheme = strings.ToLower(scheme)
	if !ok || (scheme != "http" && scheme != "https") {
		return "", errors.New("the scheme must be http:// or https://")
	}
	if rest == "" {
		return "", errors.New("no host")
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		if rest[i:] != "/" {
			return "", errors.New("an origin has no path, query or fragment")
		}
		rest = rest[:i] // a lone trailing slash: say how to write it
	}
	if strings.Contains(rest, "@") {
		return "", errors.New("an origin has no user name or password")
	}
	hostPart, port, err := splitHostPort(rest)
	if err != nil {
		return "", err
	}
	host, err := canonicalHost(hostPart)
	if err != nil {
		return "", err
	}
	port, err = canonicalPort(scheme, port)
	if err != nil {
		return "", err
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port"; port is "" when absent.
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("an IPv6 address needs its closing ]")
		}
		host, after := s[:end+1], s[end+1:]
		if after == "" {
			return host, "", nil
		}
		if after[0] != ':' {
			return "", "", errors.New("only :port may follow an IPv6 address")
		}
		return host, after[1:], nil
	}
	host, port, _ = strings.Cut(s, ":")
	return host, port, nil
}

// canonicalHost is the host as browsers serialize it.
func canonicalHost(h string) (string, error) {
	if strings.HasPrefix(h, "[") {
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
		if err != nil || !a.Is6() || a.Zone() != "" || a.Is4In6() {
			return "", errors.New("the host is not an IPv6 address (in brackets, without a zone or an IPv4 tail)")
		}
		return "[" + a.String() + "]", nil
	}
	if h == "" {
		return "", errors.New("no host")
	}
	if strings.Contains(h, "*") {
		return "", errors.New("wildcards are not supported: list each origin")
	}
	if endsInNumber(h) {
		// Browsers read such a host as an IPv4 address, and write it in dotted decimal.
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is4() {
			return "", errors.New("the host is neither a domain name nor an IPv4 address in dotted decimal")
		}
		return a.String(), nil
	}
	ascii, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("the host is not a domain name: %w", err)
	}
	return ascii, nil
}

// endsInNumber tells a host whose last label is a number, which the URL standard reads as an
// IPv4 address (and refuses when it is not one): "127.0.0.1", "10.1", "example.0x10".
func endsInNumber(h string) bool {
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	l := strings.ToLower(last)
	return strings.HasPrefix(l, "0x") && strings.Trim(l[2:], "0123456789abcdef") == ""
}

// canonicalPort is the port as browsers serialize it: decimal without leading zeros, none for the
// scheme's default. It must be a number from 1 to 65535 (an empty one is no port).
func canonicalPort(scheme, p string) (string, error) {
	if p == "" {
		return "", nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || strings.Trim(p, "0123456789") != "" || n < 1 || n > 65535 {
		return "", errors.New("the port must be a number from 1 to 65535")
	}
	if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
		return "", nil
	}
	return strconv.Itoa(n), nil
}

// originsFlag is a flag.Value over the CORS origins.
type originsFlag struct{ dst *[]string }

func (f originsFlag) String() string {
	if f.dst == nil {
		return ""
	}
	return strings.Join(*f.dst, ",")
}

func (f originsFlag) Set(v string) error {
	o, err := parseOrigins(v)
	if err != nil {
		return err
	}
	*f.dst = o
	return nil
}
