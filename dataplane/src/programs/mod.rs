//! The switch programs.
//!
//! Each is a [`Program`](crate::switch::Program) built from a validated
//! [`Config`](crate::config::Config) into a [`BuildCtx`], which collects the resources it declares,
//! the drop reasons it names and the multicast groups it sets up.

pub mod dta_translator;
pub mod dta_reporter;
pub mod l2l3;
pub mod macswap;

use crate::model::{DropReasons, Resources};
use crate::switch::McastGroups;

/// What a program's constructor fills in besides the program itself.
#[derive(Debug, Default)]
pub struct BuildCtx {
    /// Declared resources.
    pub resources: Resources,
    /// Drop reasons.
    pub drops: DropReasons,
    /// Multicast groups.
    pub mcast: McastGroups,
}

use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::switch::{Program, Switch, SwitchOptions};
use crate::tm::TrafficManager;

impl BuildCtx {
    /// The resources of a program built on `l2l3`: `l2l3`'s (declared first, and taken from
    /// this context by its build), then everything declared here since.
    pub fn resources_after_l2l3(&mut self, l2l3: &l2l3::L2l3) -> Resources {
        let mut resources = l2l3.resources().clone();
        for r in std::mem::take(&mut self.resources).list() {
            resources.declare(r.clone());
        }
        resources
    }
}

/// A program built from a configuration.
pub trait FromConfig: Program + Sized {
    /// Build the program, declaring its resources, drop reasons and multicast groups in `ctx`.
    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError>;
}

impl FromConfig for dta_translator::DtaTranslator {
    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Self::build(cfg, ctx)
    }
}

impl FromConfig for l2l3::L2l3 {
    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Self::build(cfg, ctx)
    }
}

/// A switch running `P` as `cfg` describes: the program, its traffic manager and options.
pub fn build_switch<P: FromConfig, F: Frame>(cfg: &Config) -> Result<Switch<P, F>, ConfigError> {
    let mut ctx = BuildCtx::default();
    let program = P::from_config(cfg, &mut ctx)?;
    let tm = TrafficManager::new(cfg.tm.clone(), cfg.ports.iter().map(|p| p.tm.clone()).collect())
        .map_err(|e| cfg.ctx().err("tm", e))?;
    let opts = SwitchOptions {
        max_recirc: cfg.runtime.max_recirc,
        pfc_to_program: cfg.runtime.pfc_to_program,
        ..SwitchOptions::default()
    };
    Ok(Switch::new(program, ctx.drops, ctx.mcast, tm, opts))
}
