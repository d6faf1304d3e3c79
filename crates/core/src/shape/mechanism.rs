//! Building the ACK mechanism a policy class names ([`build`]), from its `mechanism` table.

use super::ackmech::{AckMechanism, KINDS};

/// Build the mechanism a policy class names. `settings` is the table without `kind`.
/// `Ok(None)` for `kind = "none"` (class-only shaping). Errors are `(key within the table,
/// message)`, so the policy loader can name the file and the dotted key.
///
/// Each mechanism (TCR, PostACK) adds its arm here.
pub fn build(
    kind: &str,
    settings: &crate::table::Table,
) -> Result<Option<Box<dyn AckMechanism + Send>>, (String, String)> {
    match kind {
        "none" => {
            if let Some(k) = settings.keys().next() {
                return Err((k.clone(), "unknown key for mechanism \"none\" (it has no settings)".into()));
            }
            Ok(None)
        }
        "tcr" => {
            let cfg = super::tcr::TcrConfig::from_table(settings)?;
            // The class rate arrives through `set_rate` before the first packet.
            Ok(Some(Box::new(super::tcr::Tcr::new(cfg, 0))))
        }
        "postack" => {
            let cfg = super::postack::PostAckConfig::from_table(settings)?;
            Ok(Some(Box::new(super::postack::PostAck::new(cfg))))
        }
        other => Err(("kind".into(), format!("expected one of {}, got {other:?}", KINDS.join(", ")))),
    }
}
