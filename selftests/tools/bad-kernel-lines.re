WARNING:|BUG:|Oops|general protection|kernel BUG|UBSAN|KASAN|refcount_t|list_add corruption|kmemleak: .*(suspected memory leak|unreferenced)
