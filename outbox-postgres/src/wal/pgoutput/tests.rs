use bytes::{BufMut, Bytes, BytesMut};

use super::*;

fn relation() -> Bytes {
    let mut m = BytesMut::new();
    m.put_u8(b'R');
    m.put_u32(7);
    m.put_slice(b"shop\0outbox\0");
    m.put_u8(b'd');
    m.put_u16(2);
    for name in ["id", "route"] {
        m.put_u8(0);
        m.put_slice(name.as_bytes());
        m.put_u8(0);
        m.put_u32(25);
        m.put_i32(-1);
    }
    m.freeze()
}

fn insert() -> Bytes {
    let mut m = BytesMut::new();
    m.put_u8(b'I');
    m.put_u32(7);
    m.put_u8(b'N');
    m.put_u16(2);
    m.put_u8(b'b');
    m.put_u32(8);
    m.put_i64(42);
    m.put_u8(b'n');
    m.freeze()
}

#[test]
fn a_relation_and_its_insert_decode() {
    let mut relations = Relations::default();
    assert!(matches!(
        relations.decode(&relation()),
        Ok(Change::Relation)
    ));
    let described = relations.get(7).unwrap();
    assert_eq!(
        (described.schema.as_str(), described.table.as_str()),
        ("shop", "outbox")
    );
    assert_eq!(described.columns, ["id", "route"]);
    let Ok(Change::Insert { relation, values }) = relations.decode(&insert()) else {
        panic!("an insert");
    };
    assert_eq!(relation, 7);
    assert_eq!(values[0].as_deref(), Some(&42i64.to_be_bytes()[..]));
    assert_eq!(values[1], None);
}

#[test]
fn every_cut_of_a_change_is_refused_without_a_panic() {
    let mut relations = Relations::default();
    for message in [relation(), insert()] {
        for end in 1..message.len() {
            assert!(
                relations.decode(&message.slice(..end)).is_err(),
                "cut at {end}"
            );
        }
    }
    assert!(matches!(
        relations.decode(&Bytes::from_static(b"T")),
        Ok(Change::Other)
    ));
}

#[test]
fn an_outbox_row_missing_a_column_is_refused() {
    let relation = Relation {
        schema: "shop".into(),
        table: "outbox".into(),
        columns: vec!["id".into()],
    };
    let values = vec![Some(Bytes::copy_from_slice(&1i64.to_be_bytes()))];
    let err = outbox_row(&relation, values).unwrap_err();
    assert!(err.to_string().contains("event_id"), "{err}");
}
