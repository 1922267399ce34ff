//! DAIET's WordCount in the lab: the reducers' output equals a plain word count with
//! collisions and spills at both levels of a tree, DAIET cuts what the reducers receive against
//! both baselines, and 1 % loss is measured and counted, not hidden.

use std::collections::BTreeMap;
use std::path::Path;

use softfabric::daiet::lab::{LabFile, Mode, run};

fn lab(name: &str) -> LabFile {
    LabFile::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/daiet").join(name)).unwrap()
}

fn corpus(f: &LabFile) -> (String, BTreeMap<String, u64>) {
    let text = roce::daiet::corpus(&f.corpus_spec(), |k| f.collision_index(k));
    let want = roce::daiet::word_count(&text);
    (text, want)
}

#[test]
fn wordcount_on_a_two_level_tree_is_exact_with_collisions_and_spills() {
    let f = lab("wordcount-small.toml");
    let (text, want) = corpus(&f);
    let d = run(&f, &text, &want, Mode::Daiet, 256).unwrap();
    assert!(d.exact && d.complete, "{} words off, {} reducers incomplete", d.words_off, d.incomplete);
    assert!(d.switch_pairs.2 > 1000, "keys collided and spilled: {:?}", d.switch_pairs);
    assert_eq!(d.switch_drops, 0);
    let u = run(&f, &text, &want, Mode::Udp, 0).unwrap();
    let t = run(&f, &text, &want, Mode::Tcp, 0).unwrap();
    assert!(u.exact && t.exact);
    let sum = |r: &softfabric::daiet::lab::Run, q: fn(&softfabric::daiet::lab::ReducerRun) -> u64| {
        r.reducers.iter().map(q).sum::<u64>()
    };
    // Less data than TCP and fewer packets than UDP at every size; pairs received at the
    // reducers far fewer than the mappers sent.
    assert!(sum(&d, |x| x.bytes) * 2 < sum(&t, |x| x.bytes));
    assert!(sum(&d, |x| x.packets) * 3 < sum(&u, |x| x.packets));
    assert!(sum(&d, |x| x.pairs) * 2 < d.pairs_sent);
}

#[test]
fn the_paper_shape_is_exact_and_near_the_papers_reduction() {
    let mut f = lab("wordcount-one-switch.toml");
    f.corpus.bytes = 2_000_000;
    f.corpus.vocabulary = 8_000;
    f.cells = vec![4096];
    let (text, want) = corpus(&f);
    let d = run(&f, &text, &want, Mode::Daiet, 4096).unwrap();
    let t = run(&f, &text, &want, Mode::Tcp, 0).unwrap();
    assert!(d.exact && d.complete);
    assert_eq!(d.switch_pairs.2, 0, "a collision-free corpus spills nothing");
    for (x, y) in d.reducers.iter().zip(&t.reducers) {
        let cut = 1.0 - x.bytes as f64 / y.bytes as f64;
        assert!(cut > 0.8, "data cut {cut:.3} at a reducer");
    }
}

#[test]
fn one_percent_loss_is_counted_and_leaves_the_result_short() {
    let mut f = lab("wordcount-small.toml");
    f.loss = 0.01;
    let (text, want) = corpus(&f);
    let d = run(&f, &text, &want, Mode::Daiet, 256).unwrap();
    assert!(d.lost_packets > 0 && d.lost_pairs > 0);
    assert!(!d.exact, "DAIET has no recovery: a loss shows in the result");
    // Each lost pair was one occurrence (no combiner here), and a tree whose END was lost
    // holds back even more: at least what was lost is missing.
    assert!(d.count_missing >= d.lost_pairs, "{} missing, {} lost", d.count_missing, d.lost_pairs);
}

#[test]
fn every_daiet_lab_file_loads() {
    for e in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/daiet")).unwrap() {
        let p = e.unwrap().path();
        LabFile::load(&p).unwrap_or_else(|e| panic!("{e}"));
    }
}
