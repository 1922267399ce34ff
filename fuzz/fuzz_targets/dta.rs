//! DTA reports in both base forms and every Key-Write data length, and DTA NACKs. Whatever
//! parses must round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::dta::{BaseForm, DtaPacket, DtaRepr, Format, NackRepr};

fuzz_target!(|data: &[u8]| {
    for base in [BaseForm::Short, BaseForm::Long] {
        if let Ok(p) = DtaPacket::new_checked(data, base) {
            let _ = (p.opcode(), p.immediate(), p.seqnum(), p.priority_bits(), p.primitive().len());
        }
        for keywrite_data_len in [4, 12, 28] {
            let format = Format { base, keywrite_data_len };
            if let Ok(r) = DtaRepr::parse(data, format) {
                let mut b = vec![0u8; r.buffer_len()];
                r.emit(&mut b).unwrap();
                assert_eq!(DtaRepr::parse(&b, format).unwrap(), r);
            }
        }
    }
    if let Ok(n) = NackRepr::parse(data) {
        // Two bytes, or fourteen with our extension.
        let mut b = vec![0u8; n.buffer_len()];
        n.emit(&mut b).unwrap();
        assert_eq!(NackRepr::parse(&b).unwrap(), n);
    }
});
