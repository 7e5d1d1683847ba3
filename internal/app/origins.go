package app

import (
	"fmt"
	"net/url"
	"strings"
)

// parseOrigins reads BACKOFFICE_CORS_ORIGINS: origins separated by commas, each exactly as a
// browser sends it in Origin (scheme://host[:port], lower case, no default port, no path).
// Anything else is refused, naming the form it should take, because a near miss such as a
// trailing slash would never match and CORS would silently stay off for that origin.
func parseOrigins(v string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		want, err := canonicalOrigin(o)
		if err != nil {
			return nil, err
		}
		if o != want {
			return nil, fmt.Errorf("%q is not an origin as browsers send it; write %q", o, want)
		}
		out = append(out, o)
	}
	return out, nil
}

// canonicalOrigin is o serialized as the Fetch standard serializes an origin.
func canonicalOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin such as https://crm.example.com or http://localhost:3000", o)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin: an origin has no path, query or fragment (e.g. https://crm.example.com)", o)
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + host, nil
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
