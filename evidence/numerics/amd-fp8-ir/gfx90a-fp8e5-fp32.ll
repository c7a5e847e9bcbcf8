  %8 = tail call i8 @llvm.amdgcn.raw.ptr.buffer.load.i8(ptr addrspace(8) %7, i32 %6, i32 0, i32 0)
  %9 = insertelement <4 x i8> <i8 0, i8 poison, i8 poison, i8 poison>, i8 %8, i64 1
  %10 = bitcast <4 x i8> %9 to <2 x half>
  %11 = extractelement <2 x half> %10, i64 0
  %12 = fpext half %11 to float
  %13 = tail call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) %1, i16 0, i64 2147483646, i32 159744)
  %14 = shl nuw nsw i32 %6, 2
  tail call void @llvm.amdgcn.raw.ptr.buffer.store.f32(float %12, ptr addrspace(8) %13, i32 %14, i32 0, i32 0)
