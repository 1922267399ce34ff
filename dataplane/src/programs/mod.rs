//! The switch programs, one folder each, and the registry that lists them.
//!
//! A program is a folder `programs/<name>/` holding its configuration section, its declarations
//! (parser, tables, registers, hash units: [`crate::model`]), its fast path (a
//! [`Program`]) and its control commands. It implements
//! [`FromConfig`] — its name, the configuration sections it owns and how it is built from a
//! validated [`Config`] into a [`BuildCtx`], which collects the resources it declares, the drop
//! reasons it names and the multicast groups it sets up — and one line of the `registry!` below
//! makes it available to `dataplane run`, `check` and `resources`, the tests and the lab.

#[cfg(test)]
pub(crate) mod conformance;
pub mod daiet;
pub mod dta_reporter;
pub mod dta_translator;
pub mod hawkeye;
pub mod l2l3;
pub mod macswap;
pub mod ufab;

use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::model::{DropReasons, Resources};
use crate::switch::{DynSwitch, McastGroups, Program, Switch, SwitchOptions};
use crate::tm::TrafficManager;

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

impl BuildCtx {
    /// The resources of a program built on `l2l3`: `l2l3`'s (declared first, and taken from
    /// this context by its build), then everything declared here since.
    pub fn resources_after_l2l3(&mut self, l2l3: &l2l3::L2l3) -> Resources {
        let mut resources = l2l3.resources().clone();
        resources.extend(std::mem::take(&mut self.resources));
        resources
    }
}

/// A program as the registry knows it: its name, the configuration sections it owns, and how it
/// is built from a configuration.
pub trait FromConfig: Program + Sized {
    /// The name configuration files give (`program = "l2l3"`).
    const NAME: &'static str;
    /// One line saying what it does.
    const ABOUT: &'static str;
    /// The top-level configuration sections it reads (`[l2l3]`, `[dta]`, …); any other is refused.
    const SECTIONS: &'static [&'static str];
    /// Why it runs one pipeline only (state that cannot be split over lcores), if it does: the
    /// configuration and the runtime then refuse more than one.
    const SINGLE_PIPELINE: Option<&'static str> = None;

    /// Build the program, declaring its resources, drop reasons and multicast groups in `ctx`.
    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError>;

    /// Its sections resolved, every default filled in, as `dataplane check` prints them after
    /// the generic part.
    fn resolved(_cfg: &Config) -> Result<String, ConfigError> {
        Ok(String::new())
    }

    /// Its P4 rendering for `cfg` ([`crate::p4`]): the hand-written steps and the control-plane
    /// state its tables hold; an error for a program not rendered (or a configuration the
    /// targets cannot run).
    fn p4(&self, _cfg: &Config) -> Result<crate::p4::ProgramP4, crate::p4::ExportError> {
        Err(crate::p4::ExportError::NoRendering(Self::NAME.to_string()))
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

/// Why [`p4_export`] failed: the configuration, or the export.
#[derive(Debug, thiserror::Error)]
pub enum P4ExportError {
    /// The configuration does not build.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The export.
    #[error(transparent)]
    Export(#[from] crate::p4::ExportError),
}

/// A registered program, as data.
#[derive(Debug, Clone, Copy)]
pub struct ProgramInfo {
    /// [`FromConfig::NAME`].
    pub name: &'static str,
    /// [`FromConfig::ABOUT`].
    pub about: &'static str,
    /// [`FromConfig::SECTIONS`].
    pub sections: &'static [&'static str],
    /// [`FromConfig::SINGLE_PIPELINE`].
    pub single_pipeline: Option<&'static str>,
}

/// The registered program called `name`.
pub fn find(name: &str) -> Option<&'static ProgramInfo> {
    PROGRAMS.iter().find(|p| p.name == name)
}

/// The registry: one line per program. It makes [`PROGRAMS`], and [`build`] and [`resolved`],
/// which build or describe the program a configuration names.
macro_rules! registry {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        /// Every program, in the order `dataplane` lists them.
        pub const PROGRAMS: &[ProgramInfo] = &[$(ProgramInfo {
            name: <$module::$ty as FromConfig>::NAME,
            about: <$module::$ty as FromConfig>::ABOUT,
            sections: <$module::$ty as FromConfig>::SECTIONS,
            single_pipeline: <$module::$ty as FromConfig>::SINGLE_PIPELINE,
        }),*];

        /// The switch `cfg` describes, running its program over `F` buffers, behind
        /// [`DynSwitch`]: what the poll-mode runtime, the lab and the tools drive.
        pub fn build<F: Frame + Send + 'static>(cfg: &Config) -> Result<Box<dyn DynSwitch<F>>, ConfigError> {
            match cfg.program.as_str() {
                $(n if n == <$module::$ty as FromConfig>::NAME => {
                    Ok(Box::new(build_switch::<$module::$ty, F>(cfg)?))
                })*
                other => Err(cfg.ctx().err("program", format!("unknown program {other:?}"))),
            }
        }

        /// The configured program exported as P4 for `target` ([`crate::p4::export`]).
        pub fn p4_export(cfg: &Config, target: crate::p4::Target) -> Result<crate::p4::Export, P4ExportError> {
            let source = cfg.file.file_name().map_or_else(|| cfg.file.display().to_string(), |f| f.to_string_lossy().into_owned());
            match cfg.program.as_str() {
                $(n if n == <$module::$ty as FromConfig>::NAME => {
                    let sw = build_switch::<$module::$ty, crate::buf::PktBuf>(cfg)?;
                    let p = sw.program().p4(cfg)?;
                    Ok(crate::p4::export(n, &source, sw.program().resources(), &p, target)?)
                })*
                other => Err(cfg.ctx().err("program", format!("unknown program {other:?}")).into()),
            }
        }

        /// The program's sections of `cfg`, resolved ([`FromConfig::resolved`]).
        pub fn resolved(cfg: &Config) -> Result<String, ConfigError> {
            match cfg.program.as_str() {
                $(n if n == <$module::$ty as FromConfig>::NAME => <$module::$ty as FromConfig>::resolved(cfg),)*
                other => Err(cfg.ctx().err("program", format!("unknown program {other:?}"))),
            }
        }
    };
}

registry! {
    l2l3::L2l3,
    macswap::MacSwap,
    dta_translator::DtaTranslator,
    dta_reporter::DtaReporter,
    hawkeye::Hawkeye,
    ufab::Ufab,
    daiet::Daiet,
}
