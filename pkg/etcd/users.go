package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// rangeKey identifies a permission's range of keys.
type rangeKey struct{ key, end string }

func (c *realClient) EnsureUser(ctx context.Context, u User) error {
	if u.Name == rootName || u.Role == rootName {
		return ErrRootUser
	}
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	if err := ensureRole(ctx, cli, u.Role, u.Permissions); err != nil {
		return err
	}
	roles, err := ensureUser(ctx, cli, u)
	if err != nil {
		return err
	}
	for _, r := range roles {
		if r == u.Role {
			continue
		}
		// Least privilege: a role someone else granted (root's above all)
		// goes.
		if _, err := cli.UserRevokeRole(ctx, u.Name, r); err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrRoleNotGranted) {
			return fmt.Errorf("revoke role %s from user %s: %w", r, u.Name, mapError(err))
		}
	}
	if !slices.Contains(roles, u.Role) {
		if _, err := cli.UserGrantRole(ctx, u.Name, u.Role); err != nil {
			return fmt.Errorf("grant role %s to user %s: %w", u.Role, u.Name, mapError(err))
		}
	}
	return nil
}

// ensureRole adds the role if needed and gives it exactly perms: the
// permissions no longer wanted are revoked first, so that a prefix that
// moves is never open to the user under both names at once.
func ensureRole(ctx context.Context, cli *clientv3.Client, role string, perms []Permission) error {
	if _, err := cli.RoleAdd(ctx, role); err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("add role %s: %w", role, mapError(err))
	}
	resp, err := cli.RoleGet(ctx, role)
	if err != nil {
		return fmt.Errorf("get role %s: %w", role, mapError(err))
	}
	have := map[rangeKey]Access{}
	for _, p := range resp.Perm {
		have[rangeKey{string(p.Key), string(p.RangeEnd)}] = accessOf(p.PermType)
	}
	want := wantedRanges(perms)
	for k := range have {
		if _, ok := want[k]; ok {
			continue
		}
		if _, err := cli.RoleRevokePermission(ctx, role, k.key, k.end); err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrPermissionNotGranted) {
			return fmt.Errorf("revoke %q from role %s: %w", k.key, role, mapError(err))
		}
	}
	for k, a := range want {
		if h, ok := have[k]; ok && h == a {
			continue
		}
		if _, err := cli.RoleGrantPermission(ctx, role, k.key, k.end, permType(a)); err != nil {
			return fmt.Errorf("grant %s on %q to role %s: %w", a, k.key, role, mapError(err))
		}
	}
	return nil
}

// ensureUser adds the user if needed (without a password when it has
// none: it then logs in with a certificate only) and returns its roles.
func ensureUser(ctx context.Context, cli *clientv3.Client, u User) ([]string, error) {
	resp, err := cli.UserGet(ctx, u.Name)
	switch {
	case errors.Is(rpctypes.Error(err), rpctypes.ErrUserNotFound):
		opts := &clientv3.UserAddOptions{NoPassword: u.Password == ""}
		if _, err := cli.UserAddWithOptions(ctx, u.Name, u.Password, opts); err != nil {
			return nil, fmt.Errorf("add user %s: %w", u.Name, mapError(err))
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get user %s: %w", u.Name, mapError(err))
	}
	if u.SetPassword && u.Password != "" {
		if _, err := cli.UserChangePassword(ctx, u.Name, u.Password); err != nil {
			return nil, fmt.Errorf("change the password of user %s: %w", u.Name, mapError(err))
		}
	}
	return resp.Roles, nil
}

func (c *realClient) DeleteUser(ctx context.Context, name, role string) error {
	if name == rootName || role == rootName {
		return ErrRootUser
	}
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	if _, err := cli.UserDelete(ctx, name); err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrUserNotFound) {
		return fmt.Errorf("delete user %s: %w", name, mapError(err))
	}
	if _, err := cli.RoleDelete(ctx, role); err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrRoleNotFound) {
		return fmt.Errorf("delete role %s: %w", role, mapError(err))
	}
	return nil
}

// wantedRanges is perms by range; of a range given twice, the wider access
// wins.
func wantedRanges(perms []Permission) map[rangeKey]Access {
	want := map[rangeKey]Access{}
	for _, p := range perms {
		k := rangeKey{p.Key, p.RangeEnd}
		if a, ok := want[k]; ok && a != p.Access {
			want[k] = AccessReadWrite
			continue
		}
		want[k] = p.Access
	}
	return want
}

func permType(a Access) clientv3.PermissionType {
	return clientv3.PermissionType(map[Access]authpb.Permission_Type{
		AccessRead: authpb.READ, AccessWrite: authpb.WRITE, AccessReadWrite: authpb.READWRITE,
	}[a])
}

func accessOf(t authpb.Permission_Type) Access {
	return map[authpb.Permission_Type]Access{
		authpb.READ: AccessRead, authpb.WRITE: AccessWrite, authpb.READWRITE: AccessReadWrite,
	}[t]
}
