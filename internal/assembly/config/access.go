package config

import (
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/internal/httpguard"
)

// The names the audit log gives the single tokens of older
// configurations.
const (
	// TokenOperator is the name of admin.token's operator.
	TokenOperator = "admin"
	// TokenViewer is the name of admin.viewer_token's viewer.
	TokenViewer = "viewer"
)

// hasOperator reports whether someone can be let in as an operator:
// admin.token, an operator of admin.operators, or a proxy (whose role
// the groups decide).
func (a Admin) hasOperator() bool {
	if a.Token != "" || a.ProxyAuth != nil {
		return true
	}
	for _, o := range a.Operators {
		if o.Role == string(access.Operator) {
			return true
		}
	}
	return false
}

// HasCredentials reports whether the admin section lets anyone in:
// admin.token, admin.operators or admin.proxy_auth (without any, serve
// runs only with --insecure-no-auth on a loopback address).
func (a Admin) HasCredentials() bool {
	return a.Token != "" || len(a.Operators) > 0 || a.ProxyAuth != nil
}

// Access is the access.Config of the admin section: admin.token as the
// operator TokenOperator, admin.viewer_token as the viewer TokenViewer,
// admin.operators by their hashes, admin.proxy_auth. Validate checks
// what access.New would refuse, naming the keys.
func (a Admin) Access() access.Config {
	var cfg access.Config
	if a.Token != "" {
		cfg.Credentials = append(cfg.Credentials, access.Credential{Name: TokenOperator, Role: access.Operator, Token: a.Token})
	}
	if a.ViewerToken != "" {
		cfg.Credentials = append(cfg.Credentials, access.Credential{Name: TokenViewer, Role: access.Viewer, Token: a.ViewerToken})
	}
	for _, o := range a.Operators {
		cfg.Credentials = append(cfg.Credentials, access.Credential{Name: o.Name, Role: access.Role(o.Role), Hash: o.TokenHash})
	}
	if pa := a.ProxyAuth; pa != nil {
		cfg.Proxy = &access.Proxy{UserHeader: pa.UserHeader, GroupsHeader: pa.GroupsHeader, Role: access.Role(pa.Role),
			OperatorGroups: slices.Clone(pa.OperatorGroups), ViewerGroups: slices.Clone(pa.ViewerGroups)}
		for _, s := range pa.Proxies {
			if p, err := httpguard.ParsePrefix(s); err == nil {
				cfg.Proxy.Addresses = append(cfg.Proxy.Addresses, p)
			}
		}
	}
	return cfg
}

// validateAccess checks admin.operators and admin.proxy_auth.
func (a Admin) validateAccess(p *problems) {
	names := map[string]string{}
	sums := map[[sha256.Size]byte]string{}
	if a.Token != "" {
		names[TokenOperator] = "admin.token's operator"
		sums[sha256.Sum256([]byte(a.Token))] = "admin.token"
	}
	if a.ViewerToken != "" {
		names[TokenViewer] = "admin.viewer_token's viewer"
		sums[sha256.Sum256([]byte(a.ViewerToken))] = "admin.viewer_token"
	}
	for i, o := range a.Operators {
		path := fmt.Sprintf("admin.operators[%d]", i)
		if err := access.CheckName(o.Name); err != nil {
			p.add(path+".name", fmt.Sprintf("%q: %v", abbreviate(o.Name), err))
		} else if other, dup := names[o.Name]; dup {
			p.add(path+".name", fmt.Sprintf("%q is %s name too: each name is one holder's", o.Name, other))
		} else {
			names[o.Name] = path + "'s"
		}
		if r := access.Role(o.Role); r != access.Operator && r != access.Viewer {
			p.add(path+".role", fmt.Sprintf("%q is not operator or viewer", abbreviate(o.Role)))
		}
		sum, err := access.ParseHash(o.TokenHash)
		switch {
		case o.TokenHash == "":
			p.add(path+".token_hash", "required: the token's hash, from `redrive admin hash-token`")
		case err != nil:
			p.add(path+".token_hash", err.Error())
		case sums[sum] != "":
			p.add(path+".token_hash", fmt.Sprintf("the same token as %s: a token must name one holder", sums[sum]))
		default:
			sums[sum] = path
		}
	}
	if pa := a.ProxyAuth; pa != nil {
		pa.validate(p)
	}
}

// validate checks admin.proxy_auth.
func (pa ProxyAuth) validate(p *problems) {
	if len(pa.Proxies) == 0 {
		p.add("admin.proxy_auth.proxies", "required: the addresses the authenticating proxy connects from")
	}
	for i, s := range pa.Proxies {
		if pr, err := httpguard.ParsePrefix(s); err != nil {
			p.add(fmt.Sprintf("admin.proxy_auth.proxies[%d]", i), err.Error())
		} else if pr.Bits() == 0 {
			p.add(fmt.Sprintf("admin.proxy_auth.proxies[%d]", i), fmt.Sprintf("%q is every address: anyone could name himself", s))
		}
	}
	if err := access.CheckHeaderName(pa.UserHeader); err != nil {
		p.add("admin.proxy_auth.user_header", err.Error())
	}
	if pa.GroupsHeader != "" {
		if err := access.CheckHeaderName(pa.GroupsHeader); err != nil {
			p.add("admin.proxy_auth.groups_header", err.Error())
		}
	}
	switch access.Role(pa.Role) {
	case access.Operator, access.Viewer, access.NoRole:
	default:
		p.add("admin.proxy_auth.role", fmt.Sprintf("%q is not viewer, operator or none", abbreviate(pa.Role)))
	}
	for _, gs := range []struct {
		key    string
		groups []string
	}{{"operator_groups", pa.OperatorGroups}, {"viewer_groups", pa.ViewerGroups}} {
		if len(gs.groups) > 0 && pa.GroupsHeader == "" {
			p.add("admin.proxy_auth."+gs.key, "needs admin.proxy_auth.groups_header (the header that lists a person's groups)")
		}
		for i, g := range gs.groups {
			if err := access.CheckGroup(g); err != nil {
				p.add(fmt.Sprintf("admin.proxy_auth.%s[%d]", gs.key, i), err.Error())
			}
		}
	}
	if access.Role(pa.Role) == access.NoRole && len(pa.OperatorGroups)+len(pa.ViewerGroups) == 0 {
		p.add("admin.proxy_auth.role", "none with no operator_groups or viewer_groups lets nobody in")
	}
	if len(p.errs) == 0 {
		if err := (access.Config{Proxy: Admin{ProxyAuth: &pa}.Access().Proxy}).Validate(); err != nil {
			p.add("admin.proxy_auth", err.Error()) // a rule of access the checks above missed
		}
	}
}
