//! Who may connect and what they may do: anonymous sessions (off, read-only
//! or read-write) and user-name sessions from the configuration, each user
//! read-only or read-write. A read-only session sees the points' access
//! level without CurrentWrite, so a write is refused before it reaches a
//! device (`BadUserAccessDenied`).
//!
//! Must never: accept a user name with a wrong password (the comparison
//! takes the same time whatever the first differing byte), or log a
//! password.

use async_trait::async_trait;
use opcua::server::ServerEndpoint;
use opcua::server::address_space::AccessLevel;
use opcua::server::authenticator::{AuthManager, Password, UserToken, user_pass_security_policy_id};
use opcua::types::{Error, NodeId, StatusCode, UAString, UserTokenPolicy, UserTokenType};

/// What a kind of session may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Not allowed to connect.
    None,
    /// Read, browse, subscribe.
    Read,
    /// Also write.
    ReadWrite,
}

/// One user-name identity.
#[derive(Debug, Clone)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The password.
    pub password: String,
    /// Whether the user may write.
    pub write: bool,
}

/// The gateway's authenticator.
pub struct GatewayAuth {
    anonymous: Access,
    users: Vec<User>,
}

impl GatewayAuth {
    /// Over these identities.
    pub fn new(anonymous: Access, users: Vec<User>) -> Self {
        GatewayAuth { anonymous, users }
    }
}

fn same(a: &[u8], b: &[u8]) -> bool {
    // Length leaks; content does not.
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[async_trait]
impl AuthManager for GatewayAuth {
    async fn authenticate_anonymous_token(&self, _endpoint: &ServerEndpoint) -> Result<(), Error> {
        if self.anonymous == Access::None {
            return Err(Error::new(StatusCode::BadIdentityTokenRejected, "anonymous sessions are not allowed"));
        }
        Ok(())
    }

    async fn authenticate_username_identity_token(
        &self,
        _endpoint: &ServerEndpoint,
        username: &str,
        password: &Password,
    ) -> Result<UserToken, Error> {
        let mut found = None;
        for u in &self.users {
            // Every user is compared, so the time does not say which name exists.
            if same(u.name.as_bytes(), username.as_bytes()) & same(u.password.as_bytes(), password.get().as_bytes()) {
                found = Some(u);
            }
        }
        match found {
            Some(u) => Ok(UserToken(u.name.clone())),
            None => {
                tracing::warn!(user = username, "OPC UA: a session was refused: unknown user name or wrong password");
                Err(Error::new(StatusCode::BadUserAccessDenied, "unknown user name or wrong password"))
            }
        }
    }

    fn effective_user_access_level(&self, token: &UserToken, level: AccessLevel, _node: &NodeId) -> AccessLevel {
        let write = if token.is_anonymous() {
            self.anonymous == Access::ReadWrite
        } else {
            self.users.iter().any(|u| u.name == token.0 && u.write)
        };
        if write { level } else { level - AccessLevel::CURRENT_WRITE }
    }

    fn user_token_policies(&self, endpoint: &ServerEndpoint) -> Vec<UserTokenPolicy> {
        let mut policies = Vec::new();
        if self.anonymous != Access::None {
            policies.push(UserTokenPolicy {
                policy_id: UAString::from("anonymous"),
                token_type: UserTokenType::Anonymous,
                issued_token_type: UAString::null(),
                issuer_endpoint_url: UAString::null(),
                security_policy_uri: UAString::null(),
            });
        }
        if !self.users.is_empty() {
            // The endpoint's password policy (Basic256Sha256 on an endpoint
            // without security, see `crate::server`): the client encrypts the
            // password with the server's certificate.
            policies.push(UserTokenPolicy {
                policy_id: user_pass_security_policy_id(endpoint),
                token_type: UserTokenType::UserName,
                issued_token_type: UAString::null(),
                issuer_endpoint_url: UAString::null(),
                security_policy_uri: UAString::from(endpoint.password_security_policy().to_uri()),
            });
        }
        policies
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_users_lose_current_write() {
        let auth = GatewayAuth::new(
            Access::Read,
            vec![
                User { name: "viewer".into(), password: "v".into(), write: false },
                User { name: "operator".into(), password: "o".into(), write: true },
            ],
        );
        let rw = AccessLevel::CURRENT_READ | AccessLevel::CURRENT_WRITE;
        let node = NodeId::new(1, 1000u32);
        assert_eq!(auth.effective_user_access_level(&UserToken("operator".into()), rw, &node).bits(), rw.bits());
        assert_eq!(
            auth.effective_user_access_level(&UserToken("viewer".into()), rw, &node).bits(),
            AccessLevel::CURRENT_READ.bits()
        );
        let anonymous = UserToken(opcua::server::ANONYMOUS_USER_TOKEN_ID.into());
        assert_eq!(auth.effective_user_access_level(&anonymous, rw, &node).bits(), AccessLevel::CURRENT_READ.bits());
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }
}
