//! Keeping credentials out of everything the command prints.
//!
//! A URL is shown only through [`display_url`], which drops the password and any query
//! parameter that can carry one. As a second line of defence, every error line goes through
//! [`scrub`], which removes the passwords of the URLs the command was given (as written and
//! percent-decoded) and the password of any `scheme://user:password@` in the text, wherever a
//! client library may have echoed one.

use url::Url;

/// What replaces a credential.
const HIDDEN: &str = "***";

/// Query parameters that may carry a secret (libpq's and sqlx's names).
const SECRET_PARAMETERS: &[&str] = &["password", "sslpassword"];

/// `url` without its password and without query parameters that carry one; `None` when it
/// does not parse as a URL (the caller then shows no part of it).
pub fn display_url(url: &str) -> Option<String> {
    let mut parsed = Url::parse(url).ok()?;
    if parsed.password().is_some() {
        // Fails only for URLs that cannot have a password, which then have none.
        let _ = parsed.set_password(None);
    }
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(key, _)| !is_secret_parameter(key))
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    if kept.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(kept);
    }
    parsed.set_fragment(None);
    Some(parsed.to_string())
}

/// `url` as [`display_url`] shows it, without its user name either: the user name of a NATS URL
/// may be a token (`nats://TOKEN@host:4222`).
pub fn display_url_without_user(url: &str) -> Option<String> {
    let mut parsed = Url::parse(&display_url(url)?).ok()?;
    // Fails only for URLs that cannot have a user name, which then have none.
    let _ = parsed.set_username("");
    Some(parsed.to_string())
}

/// [`secrets_of`] `url`, and its user name (as written and percent-decoded) when it has no
/// password: a NATS token written as the user name (`nats://TOKEN@host:4222`).
pub fn secrets_with_token(url: &str) -> Vec<String> {
    let mut secrets = secrets_of(url);
    let token = url
        .split_once("://")
        .and_then(|(_, rest)| authority(rest).rsplit_once('@'))
        .map(|(userinfo, _)| userinfo)
        .filter(|userinfo| !userinfo.is_empty() && !userinfo.contains(':'));
    if let Some(token) = token {
        secrets.push(token.to_owned());
        secrets.push(decode(token));
    }
    secrets.retain(|secret| !secret.is_empty());
    secrets.sort();
    secrets.dedup();
    secrets
}

/// The secrets in `url`: its password (as written and percent-decoded) and the values of
/// query parameters that carry one. Works on text that does not parse as a URL too.
pub fn secrets_of(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    if let Some(password) = userinfo_password(url) {
        secrets.push(password.to_owned());
    }
    if let Ok(parsed) = Url::parse(url) {
        if let Some(password) = parsed.password() {
            secrets.push(password.to_owned());
            secrets.push(decode(password));
        }
        for (key, value) in parsed.query_pairs() {
            if is_secret_parameter(&key) {
                secrets.push(value.into_owned());
            }
        }
    }
    secrets.retain(|secret| !secret.is_empty());
    secrets.sort();
    secrets.dedup();
    secrets
}

/// `text` with every secret in `secrets`, and the password of every `scheme://user:pass@`,
/// replaced by `***`.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    // Longest first, so that a secret containing another is removed whole.
    let mut ordered: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    ordered.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    for secret in ordered {
        text = text.replace(secret.as_str(), HIDDEN);
    }
    scrub_userinfo(&text)
}

fn is_secret_parameter(key: &str) -> bool {
    SECRET_PARAMETERS
        .iter()
        .any(|secret| key.eq_ignore_ascii_case(secret))
}

fn decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={text}").as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// The password of `scheme://user:password@host...`, read without a URL parser (for text
/// that is not a valid URL).
fn userinfo_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = authority(rest);
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    Some(password)
}

/// The authority of what follows `://`: up to the first `/`, `?`, `#` or whitespace after the
/// last `@` (a password may hold `/` or `?` when it is not percent-encoded).
fn authority(rest: &str) -> &str {
    let end_of_token = rest
        .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
        .unwrap_or(rest.len());
    let token = &rest[..end_of_token];
    let after_at = token.rfind('@').map_or(0, |at| at + 1);
    let end = token[after_at..]
        .find(['/', '?', '#'])
        .map_or(token.len(), |offset| after_at + offset);
    &token[..end]
}

/// Replaces the password of every `scheme://user:password@` in `text`.
fn scrub_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(index) = rest.find("://") {
        let (before, after) = rest.split_at(index + 3);
        out.push_str(before);
        let authority = authority(after);
        match authority.rsplit_once('@') {
            Some((userinfo, host)) => {
                match userinfo.split_once(':') {
                    Some((user, _)) => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(HIDDEN);
                    }
                    None => out.push_str(userinfo),
                }
                out.push('@');
                out.push_str(host);
            }
            None => out.push_str(authority),
        }
        rest = &after[authority.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_displayed_url_has_no_password() {
        assert_eq!(
            display_url("postgres://app:s3cr%40t@db.internal:5432/prod?sslmode=require&password=x")
                .as_deref(),
            Some("postgres://app@db.internal:5432/prod?sslmode=require")
        );
        assert_eq!(
            display_url("redis://:pw@127.0.0.1:6379/2").as_deref(),
            Some("redis://127.0.0.1:6379/2")
        );
        assert_eq!(display_url("not a url"), None);
    }

    #[test]
    fn secrets_are_found_as_written_and_decoded() {
        let secrets = secrets_of("postgres://app:s3cr%40t@db/prod?sslpassword=key");
        assert!(secrets.contains(&"s3cr%40t".to_owned()), "{secrets:?}");
        assert!(secrets.contains(&"s3cr@t".to_owned()), "{secrets:?}");
        assert!(secrets.contains(&"key".to_owned()), "{secrets:?}");
        // Also from text no URL parser accepts.
        assert_eq!(secrets_of("redis://:p^w@host:x"), vec!["p^w".to_owned()]);
    }

    #[test]
    fn a_nats_token_is_neither_shown_nor_printed() {
        assert_eq!(
            display_url_without_user("nats://s3cr%2Ft@127.0.0.1:4222").as_deref(),
            Some("nats://127.0.0.1:4222")
        );
        assert_eq!(
            display_url_without_user("nats://u:pw@h:4222?password=x").as_deref(),
            Some("nats://h:4222")
        );
        let secrets = secrets_with_token("nats://s3cr%2Ft@127.0.0.1:4222");
        assert!(secrets.contains(&"s3cr%2Ft".to_owned()), "{secrets:?}");
        assert!(secrets.contains(&"s3cr/t".to_owned()), "{secrets:?}");
        // A user name beside a password is not a secret: only the password is.
        assert_eq!(secrets_with_token("nats://app:pw@h"), vec!["pw".to_owned()]);
        assert!(secrets_with_token("nats://h:4222").is_empty());
    }

    #[test]
    fn scrub_removes_known_secrets_and_any_userinfo_password() {
        let secrets = secrets_of("redis://:hunter2@h:6379");
        assert_eq!(
            scrub("failed at redis://:hunter2@h:6379 (hunter2)", &secrets),
            "failed at redis://:***@h:6379 (***)"
        );
        assert_eq!(
            scrub("see postgres://u:p/w?x@host/db and http://host/a@b", &[]),
            "see postgres://u:***@host/db and http://host/a@b"
        );
        assert_eq!(scrub("no url here", &[]), "no url here");
    }
}
