//! Typed access to a node's attributes, with defaults.

use crate::constant::Const;
use crate::error::{NodeResult, invalid};
use crate::proto::{AttributeProto, NodeProto};

/// The attributes of one node.
pub(crate) struct Attrs<'a>(&'a [AttributeProto]);

impl<'a> Attrs<'a> {
    /// The node's attributes.
    pub fn of(node: &'a NodeProto) -> Attrs<'a> {
        Attrs(&node.attribute)
    }

    fn get(&self, name: &str) -> Option<&'a AttributeProto> {
        self.0.iter().find(|a| a.name.as_deref() == Some(name))
    }

    /// An integer attribute.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|a| a.i)
    }

    /// An integer attribute with a default.
    pub fn int_or(&self, name: &str, default: i64) -> i64 {
        self.int(name).unwrap_or(default)
    }

    /// A float attribute with a default.
    pub fn float_or(&self, name: &str, default: f32) -> f32 {
        self.get(name).and_then(|a| a.f).unwrap_or(default)
    }

    /// A float attribute.
    pub fn float(&self, name: &str) -> Option<f32> {
        self.get(name).and_then(|a| a.f)
    }

    /// An integer list attribute.
    pub fn ints(&self, name: &str) -> Option<&'a [i64]> {
        self.get(name).map(|a| a.ints.as_slice())
    }

    /// A float list attribute.
    pub fn floats(&self, name: &str) -> Option<&'a [f32]> {
        self.get(name).map(|a| a.floats.as_slice())
    }

    /// A string attribute (lossy UTF-8) with a default.
    pub fn string_or(&self, name: &str, default: &str) -> String {
        self.get(name).and_then(|a| a.s.as_ref()).map_or_else(
            || default.to_string(),
            |s| String::from_utf8_lossy(s).into_owned(),
        )
    }

    /// A tensor attribute decoded as a constant.
    pub fn tensor(&self, name: &str) -> NodeResult<Option<Const>> {
        match self.get(name).and_then(|a| a.t.as_ref()) {
            Some(t) => match Const::from_proto(t) {
                Ok(c) => Ok(Some(c)),
                Err(e) => invalid(format!("attribute '{name}': {e}")),
            },
            None => Ok(None),
        }
    }
}
