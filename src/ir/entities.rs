//! IR entities: `u32` newtypes indexing the kernel's tables, each printing as in the text form.

use std::fmt;

macro_rules! entity {
    ($(#[$doc:meta] $name:ident => $prefix:literal;)*) => {$(
        #[$doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(crate) u32);

        impl $name {
            /// The index into the kernel's table.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    )*};
}

entity! {
    /// A kernel parameter (`param0`).
    ParamId => "param";
    /// A group of threads (`g0`).
    GroupId => "g";
    /// A payload: per-thread registers holding a tile's items (`d0`).
    DataId => "d";
    /// An operation (`op0`).
    OpId => "op";
    /// A region: an ordered list of ops, the body of a kernel, branch or loop (`region0`).
    RegionId => "region";
    /// A node of the expression arena (`e0`).
    ExprId => "e";
    /// A user-declared temp storage (`storage0`).
    StorageId => "storage";
    /// A user-declared shared array (`smem0`).
    ArrayId => "smem";
    /// A user-declared per-thread local array (`local0`).
    LocalId => "local";
    /// A user-declared constant array (`cmem0`).
    ConstId => "cmem";
}

/// A place in the user's source, recorded with `#[track_caller]` on every builder method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Loc {
    /// The source file.
    pub file: &'static str,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl Loc {
    /// The caller's location (through any chain of `#[track_caller]` functions).
    #[track_caller]
    pub fn caller() -> Loc {
        let l = std::panic::Location::caller();
        Loc {
            file: l.file(),
            line: l.line(),
            column: l.column(),
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}
